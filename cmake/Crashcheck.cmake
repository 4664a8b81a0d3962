# Crashcheck.cmake -- check a persistent-memory structure that is part of a bigger CMake build.
#
#   include(/path/to/crashcheck/cmake/Crashcheck.cmake)
#   crashcheck_structure(pmhash
#       SOURCES src/pmhash.c src/pmhash.h       # the structure's sources and headers
#       ADAPTER test/crashcheck_adapter.c       # defines `const struct cc_adapter cc_adapter`
#       PM_MALLOC                               # its malloc/new go to the pool (optional)
#       CFLAGS -DPMHASH_SMALL                   # extra flags for its code (optional)
#       FUZZ --examples 24 --seed 1)            # options of the fuzz run CTest makes (optional)
#
# gives a target `crashcheck-build-NAME` (runs `crashcheck build`, writing the build under
# ${CMAKE_BINARY_DIR}/crashcheck-builds, never into crashcheck's own folder) and a CTest test
# `crashcheck-NAME` that fuzzes it, fails on a bug crashcheck finds, and leaves
# ${CMAKE_BINARY_DIR}/crashcheck-NAME.html (the report) and .json (the results) behind.
# The `crashcheck` command is ${CRASHCHECK} if set (a path), else the one on PATH.
# Why a custom target and not add_library: crashcheck compiles the structure itself, with its
# pass and its driver, so the flags and objects are crashcheck's, not the project's.

function(crashcheck_structure name)
    cmake_parse_arguments(CC "PM_MALLOC" "ADAPTER" "SOURCES;CFLAGS;LDFLAGS;FUZZ" ${ARGN})
    if(NOT CC_ADAPTER)
        message(FATAL_ERROR "crashcheck_structure(${name}): ADAPTER is required")
    endif()
    if(CRASHCHECK)
        set(exe "${CRASHCHECK}")
    else()
        find_program(CRASHCHECK_EXECUTABLE crashcheck)
        if(NOT CRASHCHECK_EXECUTABLE)
            message(FATAL_ERROR "crashcheck_structure(${name}): no `crashcheck` on PATH; set CRASHCHECK "
                                "to its path (e.g. -DCRASHCHECK=/path/to/crashcheck/.venv/bin/crashcheck)")
        endif()
        set(exe "${CRASHCHECK_EXECUTABLE}")
    endif()
    set(builds "${CMAKE_BINARY_DIR}/crashcheck-builds")
    set(args build ${name})
    foreach(src IN LISTS CC_SOURCES)
        get_filename_component(abs "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
        list(APPEND args "${abs}")
        list(APPEND deps "${abs}")
    endforeach()
    get_filename_component(adapter "${CC_ADAPTER}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND args --adapter "${adapter}" --out "${builds}")
    if(CC_PM_MALLOC)
        list(APPEND args --pm-malloc)
    endif()
    foreach(flag IN LISTS CC_CFLAGS)
        list(APPEND args "--cflags=${flag}")
    endforeach()
    foreach(flag IN LISTS CC_LDFLAGS)
        list(APPEND args "--ldflags=${flag}")
    endforeach()
    set(stamp "${builds}/${name}/meta.json")
    add_custom_command(OUTPUT "${stamp}"
                       COMMAND "${exe}" ${args}
                       DEPENDS ${deps} "${adapter}"
                       WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
                       COMMENT "crashcheck build ${name}"
                       VERBATIM)
    add_custom_target(crashcheck-build-${name} ALL DEPENDS "${stamp}")
    add_test(NAME crashcheck-${name}
             COMMAND "${CMAKE_COMMAND}" -E env "CRASHCHECK_BUILDS=${builds}"
                     "${exe}" fuzz ${name} ${CC_FUZZ}
                     --json "${CMAKE_BINARY_DIR}/crashcheck-${name}.json"
                     --report "${CMAKE_BINARY_DIR}/crashcheck-${name}.html"
             WORKING_DIRECTORY "${CMAKE_BINARY_DIR}")
endfunction()
