# SPDX-License-Identifier: Apache-2.0
# custode_bpf_object(NAME SOURCE): compile SOURCE with clang -target bpf against
# the committed vmlinux.h, strip DWARF (BTF stays), generate NAME.skel.h with
# bpftool, and expose it through an INTERFACE target `bpf_NAME`.
find_program(CLANG_EXE NAMES clang-14 clang REQUIRED)
find_program(LLVM_STRIP_EXE NAMES llvm-strip-14 llvm-strip REQUIRED)
find_program(BPFTOOL_EXE NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)

# The target architecture for bpf_tracing.h's PT_REGS_* and syscall wrappers
# (__TARGET_ARCH_<arch>), from the host processor as libbpf-bootstrap derives
# it. Note: vmlinux/vmlinux.h was dumped from an x86_64 kernel; another
# architecture needs its own (vmlinux/README.md).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|amd64|AMD64")
  set(CUSTODE_BPF_ARCH x86)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(CUSTODE_BPF_ARCH arm64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^arm")
  set(CUSTODE_BPF_ARCH arm)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "ppc64le|powerpc64le")
  set(CUSTODE_BPF_ARCH powerpc)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "s390x")
  set(CUSTODE_BPF_ARCH s390)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "riscv64")
  set(CUSTODE_BPF_ARCH riscv)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "loongarch64")
  set(CUSTODE_BPF_ARCH loongarch)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "mips")
  set(CUSTODE_BPF_ARCH mips)
else()
  message(FATAL_ERROR "BPF: no __TARGET_ARCH for processor ${CMAKE_SYSTEM_PROCESSOR}")
endif()

set(CUSTODE_BPF_CFLAGS -g -O2 -target bpf -D__TARGET_ARCH_${CUSTODE_BPF_ARCH} -mcpu=v3
    -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers
    -I${PROJECT_SOURCE_DIR}/vmlinux -I${PROJECT_SOURCE_DIR}/include -I${PROJECT_SOURCE_DIR}/bpf/lib)

function(custode_bpf_object name source)
  set(obj ${CMAKE_CURRENT_BINARY_DIR}/bpf/${name}.bpf.o)
  set(skel ${CMAKE_CURRENT_BINARY_DIR}/bpf/${name}.skel.h)
  file(GLOB bpf_headers ${PROJECT_SOURCE_DIR}/bpf/lib/*.h ${PROJECT_SOURCE_DIR}/include/custode/*.h)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/bpf
    COMMAND ${CLANG_EXE} ${CUSTODE_BPF_CFLAGS} -c ${source} -o ${obj}.tmp
    COMMAND ${LLVM_STRIP_EXE} -g ${obj}.tmp -o ${obj}
    COMMAND ${CMAKE_COMMAND} -E remove ${obj}.tmp
    DEPENDS ${source} ${bpf_headers} ${PROJECT_SOURCE_DIR}/vmlinux/vmlinux.h
    COMMENT "BPF ${name}"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${BPFTOOL_EXE} gen skeleton ${obj} name ${name}_bpf > ${skel}.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${skel}.tmp ${skel}
    DEPENDS ${obj}
    COMMENT "skeleton ${name}"
    VERBATIM)
  add_custom_target(bpf_${name}_gen DEPENDS ${skel})
  add_library(bpf_${name} INTERFACE)
  add_dependencies(bpf_${name} bpf_${name}_gen)
  target_include_directories(bpf_${name} INTERFACE ${CMAKE_CURRENT_BINARY_DIR}/bpf)
endfunction()
