# Regenerates version.cpp from `git describe` at every build, rewriting it only when it changes.
set(ORRERY_VERSION_CPP ${CMAKE_BINARY_DIR}/generated/version.cpp)
add_custom_target(orrery_version_stamp
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DOUTPUT=${ORRERY_VERSION_CPP}
          -DFALLBACK=${PROJECT_VERSION} -P ${PROJECT_SOURCE_DIR}/cmake/WriteVersion.cmake
  BYPRODUCTS ${ORRERY_VERSION_CPP}
  COMMENT "Stamping git describe into version.cpp")
