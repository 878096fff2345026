# pmcached_registered_engines(<all-var> <persistent-var> <paged-var>): the engines registered in
# engine/engine_registry.cc, in registry order (all, the persistent ones, and the paged ones: those
# that own their records), read at configure time so that the test lists
# derived from them (tests/integration) are never written by hand.
#
# Why parse the source rather than run `pmcached --list-engines`: add_test() needs the names when
# CMake configures, before the binary exists. The registry's rows have a fixed shape,
#   {std::string(kWortEngineName), "description", /*persistent=*/true, factory},
# and each kXxxEngineName is an `inline constexpr std::string_view ... = "name";` in an
# engine/*/*_factory.h, so two regular expressions read them. The files are configure
# dependencies (editing them re-runs CMake), a row that does not match is a configure error, and
# tests/integration/test_engine_list.py compares the result with `pmcached --list-engines`.
function(pmcached_registered_engines _all_var _persistent_var _paged_var)
  set(_registry "${PROJECT_SOURCE_DIR}/engine/engine_registry.cc")
  file(GLOB _factories CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/engine/*/*_factory.h")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_registry} ${_factories})

  # kXxxEngineName -> "name", from the factory headers.
  foreach(_factory IN LISTS _factories)
    file(STRINGS "${_factory}" _lines
         REGEX "constexpr std::string_view k[A-Za-z0-9]+EngineName = \"[^\"]+\";")
    foreach(_line IN LISTS _lines)
      string(REGEX MATCH "(k[A-Za-z0-9]+EngineName) = \"([^\"]+)\"" _ "${_line}")
      set(_name_of_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
    endforeach()
  endforeach()

  # The rows of the table, in order. A row's description never contains '}' (the lambda after
  # the flag does).
  file(READ "${_registry}" _source)
  # Line comments out (they may show a row's shape); ';' and brackets would split or join CMake
  # list items, and the names and flags hold none.
  string(REGEX REPLACE "//[^\n]*" "" _source "${_source}")
  string(REGEX REPLACE "[][;]" " " _source "${_source}")
  string(REGEX MATCHALL "std::string\\(k[A-Za-z0-9]+EngineName\\)" _heads "${_source}")
  string(REGEX MATCHALL
         "std::string\\(k[A-Za-z0-9]+EngineName\\)[^}]*/\\*persistent=\\*/(true|false)"
         _rows "${_source}")
  list(LENGTH _heads _head_count)
  list(LENGTH _rows _row_count)
  if(_head_count EQUAL 0 OR NOT _head_count EQUAL _row_count)
    message(FATAL_ERROR "cmake/registered_engines.cmake: read ${_row_count} of ${_head_count} "
                        "rows of ${_registry}; keep the row shape documented there")
  endif()
  set(_all "")
  set(_persistent "")
  set(_paged "")
  foreach(_row IN LISTS _rows)
    string(REGEX MATCH "std::string\\((k[A-Za-z0-9]+EngineName)\\)" _ "${_row}")
    set(_constant "${CMAKE_MATCH_1}")
    if(NOT DEFINED _name_of_${_constant})
      message(FATAL_ERROR "cmake/registered_engines.cmake: ${_constant} (${_registry}) is not "
                          "defined in an engine/*/*_factory.h")
    endif()
    list(APPEND _all "${_name_of_${_constant}}")
    if(_row MATCHES "/\\*persistent=\\*/true$")
      list(APPEND _persistent "${_name_of_${_constant}}")
    endif()
    # An engine that owns its records (create_records): the row goes on with a nullptr factory and
    # a RecordEngineContext lambda, past what _rows matched: look up to the end of its factory.
    string(FIND "${_source}" "${_row}" _at)
    string(SUBSTRING "${_source}" ${_at} 1000 _after)
    string(REGEX MATCH "^[^}]*}" _row_and_factory "${_after}")
    if(_row_and_factory MATCHES "RecordEngineContext")
      list(APPEND _paged "${_name_of_${_constant}}")
    endif()
  endforeach()
  set(${_all_var} "${_all}" PARENT_SCOPE)
  set(${_persistent_var} "${_persistent}" PARENT_SCOPE)
  set(${_paged_var} "${_paged}" PARENT_SCOPE)
endfunction()
