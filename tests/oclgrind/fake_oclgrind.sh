#!/bin/sh
# A stand-in for oclgrind (OCLGRIND=.../fake_oclgrind.sh) that runs the program on the
# real device and prints an API error report as Oclgrind's --check-api does, on stderr:
# the wrapper must fail on it (oclgrind_catches_api_misuse).
while [ $# -gt 0 ]; do
    case $1 in
    --log | --max-wgsize | --local-mem-size | --num-threads) shift 2 ;;
    --*) shift ;;
    *) break ;;
    esac
done
"$@"
rc=$?
printf '\nOclgrind - OpenCL runtime error detected\n\tFunction: clSetKernelArg\n\tError:    CL_INVALID_ARG_SIZE\n\n' >&2
exit $rc
