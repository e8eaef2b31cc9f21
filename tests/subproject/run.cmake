# cmake -DSOURCE=... -DBINARY=... -DNANORT=... -DGENERATOR=... -P run.cmake:
# configures, builds and runs the consumer project; fails on any step.
file(REMOVE_RECURSE ${BINARY})
foreach(step configure build run)
  if(step STREQUAL "configure")
    set(cmd ${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY} -G ${GENERATOR} -DNANORT_SOURCE_DIR=${NANORT}
            -DCMAKE_BUILD_TYPE=Release)
  elseif(step STREQUAL "build")
    set(cmd ${CMAKE_COMMAND} --build ${BINARY} -j2)
  else()
    set(cmd ${BINARY}/consumer)
  endif()
  execute_process(COMMAND ${cmd} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "subproject: ${step} failed (${rc}): ${cmd}")
  endif()
endforeach()
