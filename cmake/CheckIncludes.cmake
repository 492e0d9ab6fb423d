# SPDX-License-Identifier: Apache-2.0
# cmake -DFOLDER=name -DDIR=userspace/name -DALLOWED=a,b,c -DSTAMP=file -P CheckIncludes.cmake
# The include half of the layering check (CMakeLists.txt, custode_folder):
# every #include "<top>/..." in the folder's files (and <top/...> of a folder
# of userspace/) names a folder in ALLOWED
# (the folder, the folders it reaches, and custode/ for include/custode/).
cmake_minimum_required(VERSION 3.25)
string(REPLACE "," ";" allowed "${ALLOWED}")
file(GLOB_RECURSE files ${DIR}/*.c ${DIR}/*.h)
list(SORT files)
# <top/...> too when top is a folder of userspace/ (not <sys/...>, <bpf/...>)
file(GLOB entries LIST_DIRECTORIES true ${DIR}/../*)
set(folders "")
foreach(e IN LISTS entries)
  if(IS_DIRECTORY ${e})
    get_filename_component(n ${e} NAME)
    list(APPEND folders ${n})
  endif()
endforeach()
set(bad "")
foreach(f IN LISTS files)
  file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<][^\">/]+/")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*([\"<])([^\">/]+)/.*" "\\1;\\2" m "${line}")
    list(GET m 0 quote)
    list(GET m 1 top)
    if(quote STREQUAL "<" AND NOT top IN_LIST folders)
      continue()
    endif()
    if(NOT top IN_LIST allowed)
      file(RELATIVE_PATH rel ${DIR}/../.. ${f})
      string(APPEND bad "\n  ${rel}: ${line}")
    endif()
  endforeach()
endforeach()
if(bad)
  list(REMOVE_ITEM allowed ${FOLDER} custode)
  string(JOIN ", " reach ${allowed})
  if(NOT reach)
    set(reach "none")
  endif()
  message(FATAL_ERROR "layering: userspace/${FOLDER} includes a folder it does not import:${bad}\n"
    "userspace/${FOLDER} may include only itself, include/custode/ and the folders it reaches (${reach}). "
    "Move the code, or, if the arrow points down the DAG, add the import to custode_folder(${FOLDER} ...) "
    "in CMakeLists.txt (docs/layout.md).")
endif()
file(TOUCH ${STAMP})
