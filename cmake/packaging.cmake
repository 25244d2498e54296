# Debian packages from the install components (CMakeLists.txt), with `cpack -G DEB` in
# the build tree:
#   libclgrad0     the shared library (named after its SONAME; CONTRIBUTING.md says when
#                  that changes)
#   libclgrad-dev  headers, the libclgrad.so link, the CMake package and pkg-config files
#   clgrad         the command, its man pages and bash completion, the example model
#                  files and trainers' sources (share/clgrad)
#   libclgrad-dist0     libclgrad-dist, data-parallel training over MPI (the only package
#                       here that depends on Open MPI)
#   libclgrad-dist-dev  its header (clgrad/dist_mpi.h), link, CMake component and .pc file
# Depends come from dpkg-shlibdeps (dpkg-dev) and, for -dev, the -dev packages that its
# CMake and pkg-config files name. Each package carries the copyright file and the
# changelogs Debian asks for (cmake/debian/). tests/deb_packages.sh builds and checks them.
set(CLGRAD_DEB_MAINTAINER "The clgrad authors <clgrad@example.org>" CACHE STRING
  "Maintainer field of the Debian packages (name <email>)")
set(CLGRAD_DEB_RELEASE 1 CACHE STRING "Debian revision of the packages (version X.Y.Z-RELEASE)")
set(CLGRAD_DEB_VERSION ${PROJECT_VERSION}-${CLGRAD_DEB_RELEASE})
set(CLGRAD_DEB_RUNTIME libclgrad${PROJECT_VERSION_MAJOR})   # the SONAME's number
set(CLGRAD_DEB_DIST_RUNTIME libclgrad-dist${PROJECT_VERSION_MAJOR})

# Each package's /usr/share/doc/PKG: copyright, changelog.gz (CHANGELOG.md) and
# changelog.Debian.gz, compressed as Debian does (gzip -9n: no name, no time stamp). The
# changelog's date is SOURCE_DATE_EPOCH's where set (reproducible), else now.
string(TIMESTAMP CLGRAD_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
set(CLGRAD_DEB_DOC ${PROJECT_BINARY_DIR}/debian-doc)
configure_file(${CMAKE_CURRENT_LIST_DIR}/debian/changelog.in ${CLGRAD_DEB_DOC}/changelog.Debian @ONLY)
find_program(CLGRAD_GZIP gzip)
if(CLGRAD_GZIP)
  add_custom_command(OUTPUT ${CLGRAD_DEB_DOC}/changelog.gz ${CLGRAD_DEB_DOC}/changelog.Debian.gz
    COMMAND ${CLGRAD_GZIP} -9nc ${PROJECT_SOURCE_DIR}/CHANGELOG.md > ${CLGRAD_DEB_DOC}/changelog.gz
    COMMAND ${CLGRAD_GZIP} -9nc ${CLGRAD_DEB_DOC}/changelog.Debian > ${CLGRAD_DEB_DOC}/changelog.Debian.gz
    DEPENDS ${PROJECT_SOURCE_DIR}/CHANGELOG.md ${CLGRAD_DEB_DOC}/changelog.Debian
    COMMENT "Changelogs for the Debian packages")
  add_custom_target(debian_doc ALL DEPENDS ${CLGRAD_DEB_DOC}/changelog.gz ${CLGRAD_DEB_DOC}/changelog.Debian.gz)
  # Only in the packages (and `cmake --install --component`), not in a plain install.
  foreach(comp_pkg runtime:${CLGRAD_DEB_RUNTIME} dev:libclgrad-dev tools:clgrad
                   dist_runtime:${CLGRAD_DEB_DIST_RUNTIME} dist_dev:libclgrad-dist-dev)
    string(REPLACE ":" ";" comp_pkg ${comp_pkg})
    list(GET comp_pkg 0 comp)
    list(GET comp_pkg 1 pkg)
    install(FILES ${CMAKE_CURRENT_LIST_DIR}/debian/copyright ${CLGRAD_DEB_DOC}/changelog.gz
                  ${CLGRAD_DEB_DOC}/changelog.Debian.gz
            DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${pkg} COMPONENT ${comp} EXCLUDE_FROM_ALL)
  endforeach()
endif()

set(CPACK_PACKAGE_NAME clgrad)
set(CPACK_PACKAGE_VENDOR "The clgrad authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${CLGRAD_DEB_MAINTAINER}")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL runtime dev tools dist_runtime dist_dev)
set(CPACK_DEB_COMPONENT_INSTALL ON)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${CLGRAD_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CLGRAD_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# -dev and the command depend on libclgrad0 of their own version (CPACK_COMPONENT_*_DEPENDS).
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
# dpkg-shlibdeps finds libclgrad.so.0 and libclgrad-dist.so.0, which the clgrad command
# needs, in the build tree.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/src)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${CLGRAD_DEB_RUNTIME})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# A shlibs file (libclgrad 0 libclgrad0 (>= 0.1.0-1)), for the packages built against it,
# and the ldconfig trigger.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_LIST_DIR}/debian/triggers)
# The library reaches devices through the ICD loader; an implementation does the work.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "pocl-opencl-icd | opencl-icd")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "deep learning in C on OpenCL - shared library
clgrad runs tensors, autograd, layers and optimizers on any OpenCL device:
NVIDIA, AMD and Intel GPUs, and CPUs through POCL. Models train from C
(include/clgrad.h) or from JSON model files with the clgrad command, and save
safetensors checkpoints that PyTorch reads.
.
This package holds the shared library.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libclgrad-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
# What clgradConfig.cmake's find_dependency and clgrad.pc's Requires.private name.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
  "ocl-icd-opencl-dev | opencl-dev, libclblast-dev, zlib1g-dev, libdeflate-dev, libjansson-dev")
set(CPACK_COMPONENT_DEV_DESCRIPTION "deep learning in C on OpenCL - development files
clgrad runs tensors, autograd, layers and optimizers on any OpenCL device:
NVIDIA, AMD and Intel GPUs, and CPUs through POCL.
.
This package holds the C headers (usable from C++), the libclgrad.so link,
and the files to build against clgrad with CMake (find_package(clgrad)) or
pkg-config.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME clgrad)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION science)
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime dist_runtime)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SUGGESTS "dataset-fashion-mnist, fortunes, gnuplot-nox, libclgrad-dev")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "deep learning in C on OpenCL - command-line tool
The clgrad command trains models described in JSON model files, resumes and
fine-tunes them, evaluates, predicts, samples text from character models,
lists OpenCL devices and checks every op against host references on them.
.
This package holds the command, its manual pages and bash completion, and
the example model files and example trainers' sources (/usr/share/clgrad).")

set(CPACK_DEBIAN_DIST_RUNTIME_PACKAGE_NAME ${CLGRAD_DEB_DIST_RUNTIME})
set(CPACK_DEBIAN_DIST_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_DIST_RUNTIME_DEPENDS runtime)
set(CPACK_DEBIAN_DIST_RUNTIME_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_LIST_DIR}/debian/triggers)
set(CPACK_COMPONENT_DIST_RUNTIME_DESCRIPTION "deep learning in C on OpenCL - data-parallel training over MPI
clgrad runs tensors, autograd, layers and optimizers on any OpenCL device:
NVIDIA, AMD and Intel GPUs, and CPUs through POCL.
.
This package holds libclgrad-dist, which trains one model on several MPI
ranks (processes, machines) through Open MPI; libclgrad itself needs no MPI.")

set(CPACK_DEBIAN_DIST_DEV_PACKAGE_NAME libclgrad-dist-dev)
set(CPACK_DEBIAN_DIST_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DIST_DEV_DEPENDS dist_runtime dev)
set(CPACK_COMPONENT_DIST_DEV_DESCRIPTION "deep learning in C on OpenCL - data-parallel development files
clgrad runs tensors, autograd, layers and optimizers on any OpenCL device:
NVIDIA, AMD and Intel GPUs, and CPUs through POCL.
.
This package holds the header of libclgrad-dist (clgrad/dist_mpi.h), its
libclgrad-dist.so link, and the files to build against it with CMake
(find_package(clgrad COMPONENTS dist), target clgrad::dist) or pkg-config
(clgrad-dist). Programs built against it need no MPI headers.")

include(CPack)
