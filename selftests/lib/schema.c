// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdarg.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"

#define MAX_DEPTH 64

struct ctx {
	const json_t *root;
	char *err;
	size_t errlen;
	int depth;
};

static int fail(struct ctx *c, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct ctx *c, const char *path, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(c->err, c->errlen, "%s: %s", path[0] ? path : "/", msg);
	return -EINVAL;
}

static const char *type_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

static bool type_is(const json_t *v, const char *t)
{
	const char *have = type_of(v);

	if (!strcmp(t, "number"))
		return !strcmp(have, "integer") || !strcmp(have, "number");
	return !strcmp(have, t);
}

/* Characters that don't need escaping in a JSON pointer segment are kept; ~ and / are escaped. */
static void child_path(char *out, size_t len, const char *path, const char *seg)
{
	size_t o = (size_t)snprintf(out, len, "%s/", path);

	for (; *seg && o + 3 < len; seg++) {
		if (*seg == '~' || *seg == '/') {
			out[o++] = '~';
			out[o++] = *seg == '~' ? '0' : '1';
		} else {
			out[o++] = *seg;
		}
	}
	out[o < len ? o : len - 1] = 0;
}

static int validate(struct ctx *c, const json_t *s, const json_t *v, const char *path);

static const char *const known[] = {"$schema", "$id", "$defs", "$ref", "title", "description", "type",
				    "properties", "required", "additionalProperties", "items", "enum", "const",
				    "pattern", "minimum", "maximum", "minLength", "maxLength", "minItems", "oneOf",
				    "allOf", "$comment", NULL};

static int check_keywords(struct ctx *c, const json_t *s, const char *path)
{
	const char *k;
	json_t *x;

	json_object_foreach((json_t *)s, k, x) {
		bool ok = false;

		for (int i = 0; known[i] && !ok; i++)
			ok = !strcmp(k, known[i]);
		if (!ok) {
			snprintf(c->err, c->errlen, "schema at %s: keyword \"%s\" is outside the supported subset",
				 path[0] ? path : "/", k);
			return -ENOTSUP;
		}
	}
	return 0;
}

static bool is_schema(const json_t *s)
{
	return json_is_object(s) || json_is_boolean(s);
}

static bool is_count(const json_t *x)
{
	return json_is_integer(x) && json_integer_value(x) >= 0;
}

static bool is_type_name(const json_t *t)
{
	static const char *const names[] = {"object", "array", "string", "integer", "number", "boolean", "null", NULL};
	const char *n = json_string_value(t);

	for (int i = 0; n && names[i]; i++)
		if (!strcmp(n, names[i]))
			return true;
	return false;
}

/*
 * The whole schema, before any document: every keyword inside the subset
 * and of the shape it needs, wherever it is (a subschema the document does
 * not reach is checked too), every $ref resolvable, every pattern compiling.
 */
static int check_schema(struct ctx *c, const json_t *s, const char *path, int depth)
{
	const char *k;
	char sub[1024];
	json_t *x, *e;
	size_t i;
	int err;

	if (json_is_boolean(s))
		return 0;
	if (!json_is_object(s)) {
		snprintf(c->err, c->errlen, "schema at %s is neither an object nor a boolean", path[0] ? path : "/");
		return -ENOTSUP;
	}
	if (depth > MAX_DEPTH) {
		snprintf(c->err, c->errlen, "schema at %s: nesting too deep", path[0] ? path : "/");
		return -ENOTSUP;
	}
	if ((err = check_keywords(c, s, path)))
		return err;
	json_object_foreach((json_t *)s, k, x) {
		bool ok = true;

		child_path(sub, sizeof(sub), path, k);
		if (!strcmp(k, "$schema") || !strcmp(k, "$id") || !strcmp(k, "title") || !strcmp(k, "description") ||
		    !strcmp(k, "$comment")) {
			ok = json_is_string(x);
		} else if (!strcmp(k, "$ref")) {
			const char *ref = json_string_value(x);

			ok = ref && !strncmp(ref, "#/$defs/", 8) &&
			     json_object_get(json_object_get(c->root, "$defs"), ref + 8) != NULL;
		} else if (!strcmp(k, "$defs") || !strcmp(k, "properties")) {
			const char *name;
			char sub2[1024];

			if (!(ok = json_is_object(x)))
				goto bad;
			json_object_foreach(x, name, e) {
				child_path(sub2, sizeof(sub2), sub, name);
				if ((err = check_schema(c, e, sub2, depth + 1)))
					return err;
			}
		} else if (!strcmp(k, "additionalProperties") || !strcmp(k, "items")) {
			if (!(ok = is_schema(x)))
				goto bad;
			if ((err = check_schema(c, x, sub, depth + 1)))
				return err;
		} else if (!strcmp(k, "oneOf") || !strcmp(k, "allOf")) {
			char idx[32], sub2[1024];

			if (!(ok = json_is_array(x)))
				goto bad;
			json_array_foreach(x, i, e) {
				snprintf(idx, sizeof(idx), "%zu", i);
				child_path(sub2, sizeof(sub2), sub, idx);
				if ((err = check_schema(c, e, sub2, depth + 1)))
					return err;
			}
		} else if (!strcmp(k, "required")) {
			ok = json_is_array(x);
			json_array_foreach(x, i, e) ok = ok && json_is_string(e);
		} else if (!strcmp(k, "type")) {
			ok = is_type_name(x) || (json_is_array(x) && json_array_size(x) > 0);
			if (json_is_array(x))
				json_array_foreach(x, i, e) ok = ok && is_type_name(e);
		} else if (!strcmp(k, "enum")) {
			ok = json_is_array(x);
		} else if (!strcmp(k, "pattern")) {
			regex_t re;

			if ((ok = json_is_string(x) && !regcomp(&re, json_string_value(x), REG_EXTENDED | REG_NOSUB)))
				regfree(&re);
		} else if (!strcmp(k, "minimum") || !strcmp(k, "maximum")) {
			ok = json_is_number(x);
		} else if (!strcmp(k, "minLength") || !strcmp(k, "maxLength") || !strcmp(k, "minItems")) {
			ok = is_count(x);
		}
	bad:
		if (!ok) {
			snprintf(c->err, c->errlen, "schema at %s: the value of \"%s\" is not one the subset supports",
				 path[0] ? path : "/", k);
			return -ENOTSUP;
		}
	}
	return 0;
}

/* Characters (code points) in a jansson string, which is valid UTF-8. */
static size_t utf8_chars(const char *s, size_t n)
{
	size_t chars = 0;

	for (size_t i = 0; i < n; i++)
		chars += ((unsigned char)s[i] & 0xc0) != 0x80;
	return chars;
}

static int validate_object(struct ctx *c, const json_t *s, const json_t *v, const char *path)
{
	const json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
	const json_t *addl = json_object_get(s, "additionalProperties"), *x;
	char sub[1024];
	const char *k;
	size_t i;
	int err;

	json_array_foreach((json_t *)req, i, x) {
		if (!json_object_get(v, json_string_value(x)))
			return fail(c, path, "required property \"%s\" is missing", json_string_value(x));
	}
	json_object_foreach((json_t *)v, k, x) {
		const json_t *ps = props ? json_object_get(props, k) : NULL;

		child_path(sub, sizeof(sub), path, k);
		if (ps) {
			if ((err = validate(c, ps, x, sub)))
				return err;
		} else if (json_is_false(addl)) {
			return fail(c, path, "property \"%s\" is not allowed", k);
		} else if (json_is_object(addl)) {
			if ((err = validate(c, addl, x, sub)))
				return err;
		}
	}
	return 0;
}

static int validate(struct ctx *c, const json_t *s, const json_t *v, const char *path)
{
	const json_t *x;
	int err = 0;

	if (json_is_true(s))
		return 0;
	if (json_is_false(s))
		return fail(c, path, "no value is allowed here");
	if (!json_is_object(s)) {
		snprintf(c->err, c->errlen, "schema at %s is neither an object nor a boolean", path);
		return -ENOTSUP;
	}
	if (++c->depth > MAX_DEPTH) {
		c->depth--;
		return fail(c, path, "schema nesting too deep");
	}
	if ((err = check_keywords(c, s, path)))
		goto out;
	if ((x = json_object_get(s, "$ref"))) {
		const char *ref = json_string_value(x);
		const json_t *target;

		if (!ref || strncmp(ref, "#/$defs/", 8) ||
		    !(target = json_object_get(json_object_get(c->root, "$defs"), ref + 8))) {
			snprintf(c->err, c->errlen, "schema at %s: unsupported or unknown $ref", path);
			err = -ENOTSUP;
			goto out;
		}
		if ((err = validate(c, target, v, path)))
			goto out;
	}
	if ((x = json_object_get(s, "type"))) {
		bool ok = false;

		if (json_is_string(x)) {
			ok = type_is(v, json_string_value(x));
		} else {
			size_t i;
			json_t *t;

			json_array_foreach((json_t *)x, i, t) ok |= type_is(v, json_string_value(t));
		}
		if (!ok) {
			err = fail(c, path, "expected type %s, got %s", json_is_string(x) ? json_string_value(x) : "(one of several)",
				   type_of(v));
			goto out;
		}
	}
	if ((x = json_object_get(s, "const")) && !json_equal((json_t *)x, (json_t *)v)) {
		err = fail(c, path, "expected the constant %s", json_is_string(x) ? json_string_value(x) : "value");
		goto out;
	}
	if ((x = json_object_get(s, "enum"))) {
		bool ok = false;
		size_t i;
		json_t *e;

		json_array_foreach((json_t *)x, i, e) ok |= json_equal(e, (json_t *)v);
		if (!ok) {
			err = fail(c, path, "value %s is not in the enum", json_is_string(v) ? json_string_value(v) : "");
			goto out;
		}
	}
	if (json_is_string(v)) {
		size_t len = utf8_chars(json_string_value(v), json_string_length(v));

		if ((x = json_object_get(s, "minLength")) && (json_int_t)len < json_integer_value(x)) {
			err = fail(c, path, "string shorter than minLength");
			goto out;
		}
		if ((x = json_object_get(s, "maxLength")) && (json_int_t)len > json_integer_value(x)) {
			err = fail(c, path, "string longer than maxLength");
			goto out;
		}
		if ((x = json_object_get(s, "pattern"))) {
			regmatch_t whole = {.rm_so = 0, .rm_eo = (regoff_t)json_string_length(v)};
			regex_t re;
			int r;

			if (regcomp(&re, json_string_value(x), REG_EXTENDED | REG_NOSUB)) {
				snprintf(c->err, c->errlen, "schema at %s: pattern does not compile as POSIX ERE", path);
				err = -ENOTSUP;
				goto out;
			}
			/* REG_STARTEND: all of the string, an embedded NUL included, not its C-string prefix */
			r = regexec(&re, json_string_value(v), 1, &whole, REG_STARTEND);
			regfree(&re);
			if (r) {
				err = fail(c, path, "\"%s\" does not match %s", json_string_value(v), json_string_value(x));
				goto out;
			}
		}
	}
	if (json_is_number(v)) {
		double d = json_number_value(v);

		if ((x = json_object_get(s, "minimum")) && d < json_number_value(x)) {
			err = fail(c, path, "below the minimum");
			goto out;
		}
		if ((x = json_object_get(s, "maximum")) && d > json_number_value(x)) {
			err = fail(c, path, "above the maximum");
			goto out;
		}
	}
	if (json_is_object(v) && (err = validate_object(c, s, v, path)))
		goto out;
	if (json_is_array(v)) {
		const json_t *items = json_object_get(s, "items");
		char sub[1024], idx[32];
		size_t i;
		json_t *e;

		if ((x = json_object_get(s, "minItems")) && (json_int_t)json_array_size(v) < json_integer_value(x)) {
			err = fail(c, path, "fewer items than minItems");
			goto out;
		}
		json_array_foreach((json_t *)v, i, e) {
			if (!items)
				break;
			snprintf(idx, sizeof(idx), "%zu", i);
			child_path(sub, sizeof(sub), path, idx);
			if ((err = validate(c, items, e, sub)))
				goto out;
		}
	}
	if ((x = json_object_get(s, "allOf"))) {
		size_t i;
		json_t *sub;

		json_array_foreach((json_t *)x, i, sub) if ((err = validate(c, sub, v, path))) goto out;
	}
	if ((x = json_object_get(s, "oneOf"))) {
		char first[512] = "";
		size_t i, matched = 0;
		json_t *sub;

		json_array_foreach((json_t *)x, i, sub) {
			int r = validate(c, sub, v, path);

			if (r == -ENOTSUP) {
				err = r;
				goto out;
			}
			if (!r)
				matched++;
			else if (!first[0])
				snprintf(first, sizeof(first), "%s", c->err);
		}
		if (matched != 1) {
			if (matched)
				err = fail(c, path, "matches more than one of the oneOf alternatives");
			else
				err = fail(c, path, "matches none of the oneOf alternatives (first: %s)", first);
			goto out;
		}
	}
out:
	c->depth--;
	return err;
}

int custode_schema_validate(const json_t *schema, const json_t *doc, char *err, size_t errlen)
{
	struct ctx c = {.root = schema, .err = err, .errlen = errlen};
	int r;

	if (errlen)
		err[0] = 0;
	if ((r = check_schema(&c, schema, "", 0)))
		return r;
	return validate(&c, schema, doc, "");
}
