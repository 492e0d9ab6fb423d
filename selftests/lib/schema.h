/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A validator for the subset of JSON Schema (draft 2020-12) that
 * docs/events.schema.json uses, so the stream's contract is checked in the
 * guest without Python. Keywords: $schema, $id, $defs, $ref (local
 * "#/$defs/NAME"), title, description, type, properties, required,
 * additionalProperties (boolean or schema), items, enum, const, pattern
 * (POSIX extended regex, anchored by the pattern itself), minimum, maximum,
 * minLength, maxLength, minItems, oneOf, allOf. A schema using any other
 * keyword is refused, so nothing in it goes unchecked.
 */
#ifndef CUSTODE_TEST_SCHEMA_H
#define CUSTODE_TEST_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

/*
 * 0 if `doc` validates against `schema` (root, for $ref); else -EINVAL with
 * the first failure's JSON pointer and cause in err. A schema keyword outside
 * the subset: -ENOTSUP.
 */
int custode_schema_validate(const json_t *schema, const json_t *doc, char *err, size_t errlen);

#endif
