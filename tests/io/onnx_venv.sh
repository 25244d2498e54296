#!/bin/sh
# The ONNX tests' oracle: onnxruntime from PyPI in a private venv under the build tree
# (DIR), beside Debian's python3-onnx, python3-torch and python3-numpy (system site
# packages; --no-deps keeps Debian's protobuf, which python3-onnx 1.12 is built for).
# Idempotent; fails (and so fails the tests that need it) when it cannot install.
set -eu
dir=$1
if [ -x "$dir/bin/python" ] && "$dir/bin/python" -c 'import onnxruntime, onnx, torch' 2>/dev/null; then exit 0; fi
rm -rf "$dir"
/usr/bin/python3 -m venv --system-site-packages "$dir"
"$dir/bin/python" -m pip install --quiet --no-deps --disable-pip-version-check 'onnxruntime==1.32.0'
"$dir/bin/python" -c 'import onnxruntime, onnx, torch; print("onnxruntime", onnxruntime.__version__, "onnx", onnx.__version__, "torch", torch.__version__)'
