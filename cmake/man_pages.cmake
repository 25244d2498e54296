# Writes the man pages of `clgrad` and of each of its commands with help2man, from their
# --help text, so that page and help cannot drift apart. The commands and their one-line
# summaries (each page's NAME) come from `clgrad --help`'s list; each command's page is
# made through a small wrapper, clgrad-CMD, so that its title is CLGRAD-CMD. Pages
# are written gzip'd (as Debian installs them) and plain, beside a stamp file.
# cmake -DCLGRAD=<clgrad> -DHELP2MAN=<help2man> -DGZIP=<gzip> -DVERSION=<x.y.z> -DOUT=<dir>
#       -P man_pages.cmake
foreach(v CLGRAD HELP2MAN GZIP VERSION OUT)
  if(NOT ${v})
    message(FATAL_ERROR "man_pages.cmake: ${v} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT}/bin)

execute_process(COMMAND ${CLGRAD} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "man_pages.cmake: `${CLGRAD} --help` failed (${rc})")
endif()
# "  NAME         summary" lines after "commands:", up to the first blank line.
string(REGEX MATCH "\ncommands:\n(  [a-z][^\n]*\n)+" list "${help}")
string(REGEX MATCHALL "  [a-z][a-z0-9-]* +[^\n]*" lines "${list}")
if(NOT lines)
  message(FATAL_ERROR "man_pages.cmake: no commands listed by `clgrad --help`")
endif()
set(cmds "")
set(see_also ".BR clgrad (1)")
foreach(line IN LISTS lines)
  string(REGEX REPLACE "^  ([a-z][a-z0-9-]*) +(.*)$" "\\1" cmd "${line}")
  string(REGEX REPLACE "^  ([a-z][a-z0-9-]*) +(.*)$" "\\2" summary_${cmd} "${line}")
  list(APPEND cmds ${cmd})
  string(APPEND see_also ",\n.BR clgrad-${cmd} (1)")
endforeach()
file(WRITE ${OUT}/see-also.h2m "[SEE ALSO]\n${see_also}\n")

# page NAME EXECUTABLE SUMMARY [HELP2MAN ARGS...]
function(page name exe summary)
  execute_process(COMMAND ${HELP2MAN} --no-info --version-string=${VERSION} --name=${summary}
                          --include=${OUT}/see-also.h2m --output=${OUT}/${name}.1 ${ARGN} ${exe}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "man_pages.cmake: help2man failed on ${exe} (${rc})")
  endif()
  # -n: no name or time stamp in the header, so that builds are reproducible.
  execute_process(COMMAND ${GZIP} -9nc ${OUT}/${name}.1 OUTPUT_FILE ${OUT}/${name}.1.gz RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "man_pages.cmake: gzip failed on ${name}.1")
  endif()
endfunction()

page(clgrad ${CLGRAD} "deep learning in C on OpenCL: train, evaluate and run models")
foreach(cmd IN LISTS cmds)
  set(wrapper ${OUT}/bin/clgrad-${cmd})
  # help2man takes a usage of one line: the usage's continuation lines ("    [--opt X]")
  # are joined to it, the rest of the text passes as it is.
  file(WRITE ${wrapper} "#!/bin/sh\n'${CLGRAD}' ${cmd} \"$@\" | awk '
    NR == 1 { u = $0; next }
    u != \"\" && /^ +\\[/ { sub(/^ +/, \" \"); u = u $0; next }
    u != \"\" { print u; u = \"\" }
    { print }
    END { if (u != \"\") print u }'\n")
  file(CHMOD ${wrapper} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE)
  page(clgrad-${cmd} ${wrapper} "${summary_${cmd}}")
endforeach()
file(WRITE ${OUT}/stamp "${cmds}\n")
