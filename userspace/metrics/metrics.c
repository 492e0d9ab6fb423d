// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"

/* ---- the bundle hook ---- */

#define MAX_BUNDLES 256

static struct {
	pthread_mutex_t lock;
	struct {
		char policy[129];
		uint64_t version;
		int64_t not_before, not_after;
		bool used;
	} b[MAX_BUNDLES];
} B = {.lock = PTHREAD_MUTEX_INITIALIZER};

void custode_metrics_set_bundle(const char *policy, uint64_t version, int64_t not_before, int64_t not_after)
{
	int free_slot = -1;

	if (!policy)
		return;
	pthread_mutex_lock(&B.lock);
	for (int i = 0; i < MAX_BUNDLES; i++) {
		if (B.b[i].used && !strcmp(B.b[i].policy, policy)) {
			free_slot = i;
			break;
		}
		if (!B.b[i].used && free_slot < 0)
			free_slot = i;
	}
	if (free_slot >= 0) {
		B.b[free_slot].used = true;
		snprintf(B.b[free_slot].policy, sizeof(B.b[free_slot].policy), "%s", policy);
		B.b[free_slot].version = version;
		B.b[free_slot].not_before = not_before;
		B.b[free_slot].not_after = not_after;
	}
	pthread_mutex_unlock(&B.lock);
}

void custode_metrics_clear_bundle(const char *policy)
{
	if (!policy) /* as set_bundle: nothing to forget */
		return;
	pthread_mutex_lock(&B.lock);
	for (int i = 0; i < MAX_BUNDLES; i++)
		if (B.b[i].used && !strcmp(B.b[i].policy, policy))
			B.b[i].used = false;
	pthread_mutex_unlock(&B.lock);
}

void custode_metrics_each_bundle(void (*fn)(void *ctx, const char *policy, uint64_t version, int64_t not_before,
					    int64_t not_after),
				 void *ctx)
{
	pthread_mutex_lock(&B.lock);
	for (int i = 0; i < MAX_BUNDLES; i++)
		if (B.b[i].used)
			fn(ctx, B.b[i].policy, B.b[i].version, B.b[i].not_before, B.b[i].not_after);
	pthread_mutex_unlock(&B.lock);
}

/* ---- the exposition format ---- */

struct sample {
	char *labels; /* rendered: {a="x",b="y"} or "" */
	double value;
};

struct family {
	char *name, *type, *help;
	struct sample *s;
	size_t n, cap;
};

struct custode_prom {
	struct family *f;
	size_t n, cap;
};

struct custode_prom *custode_prom_new(void)
{
	return calloc(1, sizeof(struct custode_prom));
}

void custode_prom_free(struct custode_prom *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		for (size_t k = 0; k < p->f[i].n; k++)
			free(p->f[i].s[k].labels);
		free(p->f[i].s);
		free(p->f[i].name);
		free(p->f[i].type);
		free(p->f[i].help);
	}
	free(p->f);
	free(p);
}

void custode_prom_escape(const char *in, char *out, size_t len)
{
	size_t w = 0;

	for (; *in && w + 3 < len; in++) {
		if (*in == '\\' || *in == '"') {
			out[w++] = '\\';
			out[w++] = *in;
		} else if (*in == '\n') {
			out[w++] = '\\';
			out[w++] = 'n';
		} else {
			out[w++] = *in;
		}
	}
	out[w] = 0;
}

static struct family *family(struct custode_prom *p, const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->f[i].name, name))
			return &p->f[i];
	return NULL;
}

/* arr (n of cap elements of size) with room for one more: doubled (from first) when full; NULL, arr kept, if out of memory. */
static void *room_for_one(void *arr, size_t n, size_t *cap, size_t size, size_t first)
{
	size_t ncap;
	void *na;

	if (n < *cap)
		return arr;
	ncap = *cap ? *cap * 2 : first;
	na = realloc(arr, ncap * size);
	if (na)
		*cap = ncap;
	return na;
}

void custode_prom_family(struct custode_prom *p, const char *name, const char *type, const char *help)
{
	struct family *f, *nf;

	if (!p || family(p, name))
		return;
	if (!(nf = room_for_one(p->f, p->n, &p->cap, sizeof(*nf), 32)))
		return;
	p->f = nf;
	f = &p->f[p->n++];
	memset(f, 0, sizeof(*f));
	f->name = strdup(name);
	f->type = strdup(type);
	f->help = strdup(help);
}

void custode_prom_add(struct custode_prom *p, const char *name, double value, ...)
{
	struct family *f = p ? family(p, name) : NULL;
	char labels[4096] = "", esc[1024];
	struct sample *ns;
	size_t off = 0;
	const char *k;
	va_list ap;

	if (!f)
		return;
	va_start(ap, value);
	while (off < sizeof(labels) && (k = va_arg(ap, const char *))) {
		const char *v = va_arg(ap, const char *);

		custode_prom_escape(v ? v : "", esc, sizeof(esc));
		off += (size_t)snprintf(labels + off, sizeof(labels) - off, "%s%s=\"%s\"", off ? "," : "{", k, esc);
	}
	va_end(ap);
	/* labels that don't fit would be a malformed line, and one breaks the whole scrape: no sample */
	if (off >= sizeof(labels) - 1)
		return;
	if (off)
		strcat(labels, "}");
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->s[i].labels, labels)) {
			f->s[i].value += value;
			return;
		}
	if (!(ns = room_for_one(f->s, f->n, &f->cap, sizeof(*ns), 8)))
		return;
	f->s = ns;
	f->s[f->n].labels = strdup(labels);
	f->s[f->n++].value = value;
}

static int by_labels(const void *a, const void *b)
{
	return strcmp(((const struct sample *)a)->labels, ((const struct sample *)b)->labels);
}

struct buf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (b->s && (size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = b->cap ? b->cap * 2 : 4096;
			char *ns;

			while (cap < b->len + (size_t)n + 1)
				cap *= 2;
			ns = realloc(b->s, cap);
			if (!ns) {
				b->oom = true;
				return;
			}
			b->s = ns;
			b->cap = cap;
		}
	}
}

void custode_prom_one(struct custode_prom *p, const char *name, const char *type, const char *help, double value)
{
	custode_prom_family(p, name, type, help);
	custode_prom_add(p, name, value, NULL);
}

char *custode_prom_render(const struct custode_prom *p)
{
	struct buf b = {0};

	put(&b, "%s", "");
	for (size_t i = 0; p && i < p->n; i++) {
		const struct family *f = &p->f[i];

		/* HELP text: \\ and newline escaped (the format's rule; " stays as it is) */
		put(&b, "# HELP %s ", f->name);
		for (const char *h = f->help; *h; h++) {
			if (*h == '\\')
				put(&b, "\\\\");
			else if (*h == '\n')
				put(&b, "\\n");
			else
				put(&b, "%c", *h);
		}
		put(&b, "\n# TYPE %s %s\n", f->name, f->type);
		if (f->n) /* a family without samples has no array: qsort(NULL, ...) is undefined */
			qsort(f->s, f->n, sizeof(*f->s), by_labels);
		for (size_t k = 0; k < f->n; k++) {
			double v = f->s[k].value;

			/* the format's spellings: NaN, +Inf, -Inf (printf's "nan"/"inf" would fail the scrape) */
			if (isnan(v))
				put(&b, "%s%s NaN\n", f->name, f->s[k].labels);
			else if (isinf(v))
				put(&b, "%s%s %cInf\n", f->name, f->s[k].labels, v > 0 ? '+' : '-');
			else if (v > -9007199254740992.0 && v < 9007199254740992.0 && v == (double)(long long)v)
				put(&b, "%s%s %.0f\n", f->name, f->s[k].labels, v);
			else
				put(&b, "%s%s %.17g\n", f->name, f->s[k].labels, v);
		}
	}
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}
