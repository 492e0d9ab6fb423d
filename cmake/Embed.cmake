# SPDX-License-Identifier: Apache-2.0
# Run as a script: cmake -DOUT=file.c -DINPUTS="a.json;b.json" -P Embed.cmake
# Writes a C table of (profile name, bytes) so the built-in profiles in
# policies/ are compiled into the binary byte for byte.
set(body "/* generated from policies/ by cmake/Embed.cmake; do not edit */\n#include <stddef.h>\n#include \"policy/profiles.h\"\n\n")
set(table "const struct custode_builtin_profile custode_builtin_profiles[] = {\n")
set(i 0)
foreach(f ${INPUTS})
  get_filename_component(name ${f} NAME_WE)
  file(READ ${f} hex HEX)
  string(LENGTH "${hex}" hexlen)
  math(EXPR len "${hexlen} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(APPEND body "static const unsigned char profile_${i}[] = {${bytes}0x00};\n")
  string(APPEND table "\t{\"${name}\", (const char *)profile_${i}, ${len}},\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND table "\t{NULL, NULL, 0},\n};\n")
file(WRITE ${OUT}.tmp "${body}\n${table}")
file(RENAME ${OUT}.tmp ${OUT})
