# SPDX-License-Identifier: Apache-2.0
# Run at install time (cmake --install, cpack): deploy/systemd/custode.service
# with its ExecStart (and the drop-in example) pointed at the installed binary,
# CMAKE_INSTALL_PREFIX/BINDIR/custode, written to
# DESTDIR CMAKE_INSTALL_PREFIX/lib/systemd/system/. The source unit names
# /usr/local/bin/custode, the default prefix; `--prefix /usr` (the .deb)
# installs a unit naming /usr/bin/custode.
# In: UNIT_SRC (the source unit), BINDIR (relative, e.g. bin).
if(IS_ABSOLUTE "${BINDIR}")
  set(bin "${BINDIR}/custode")
else()
  set(bin "${CMAKE_INSTALL_PREFIX}/${BINDIR}/custode")
endif()
file(READ "${UNIT_SRC}" unit)
string(REPLACE "/usr/local/bin/custode" "${bin}" unit "${unit}")
set(dir "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
file(MAKE_DIRECTORY "${dir}")
message(STATUS "Installing: ${dir}/custode.service (ExecStart=${bin})")
file(WRITE "${dir}/custode.service" "${unit}")
file(CHMOD "${dir}/custode.service" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
