# Compiler flags shared by every Orrery target, applied through the orrery_options interface.
add_library(orrery_options INTERFACE)
# Use the MPI C API only; the deprecated C++ bindings would need libmpi_cxx.
target_compile_definitions(orrery_options INTERFACE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
target_compile_options(orrery_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Woverloaded-virtual -Wnull-dereference -Wimplicit-fallthrough)
if(ORRERY_WERROR)
  target_compile_options(orrery_options INTERFACE -Werror)
endif()
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC 12 reports false positives from std::variant / inlined containers at -O2, and from
  # `"literal" + std::string` at -O3 (-Wrestrict, GCC bug 105329).
  target_compile_options(orrery_options INTERFACE -Wno-maybe-uninitialized -Wno-array-bounds
    -Wno-stringop-overflow -Wno-restrict)
  target_compile_options(orrery_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-null-dereference>)
endif()
if(ORRERY_SANITIZE)
  target_compile_options(orrery_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
    -fno-sanitize-recover=undefined)
  target_link_options(orrery_options INTERFACE -fsanitize=address,undefined)
endif()
if(ORRERY_FUZZ)
  target_compile_options(orrery_options INTERFACE -fsanitize=fuzzer-no-link,address,undefined)
  target_link_options(orrery_options INTERFACE -fsanitize=address,undefined)
endif()

# orrery_add_module(NAME SOURCES... DEPENDS targets...)
# One static library per src/ module; headers are included as "module/file.h".
function(orrery_add_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS" ${ARGN})
  add_library(orrery_${name} STATIC ${ARG_SOURCES})
  target_include_directories(orrery_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(orrery_${name} PUBLIC orrery_options ${ARG_DEPENDS})
endfunction()
