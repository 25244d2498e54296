#!/bin/sh
# The TensorBoard tests' oracle: TensorBoard's own event reader, the `tensorboard`
# package from PyPI in a private venv under the build tree (DIR). --no-deps: of its
# dependencies the reader needs only protobuf and NumPy, Debian's (python3-protobuf
# 4.21, python3-numpy, through the system site packages), and absl-py from PyPI
# (TensorBoard 2.21 needs protobuf 5: 2.20 is the last for Debian 12's). Idempotent;
# fails (and so fails the tests that need it) when it cannot install, PyPI out of reach
# included.
set -eu
dir=$1
check='import tensorboard, absl; from tensorboard.backend.event_processing import event_accumulator, event_file_loader'
if [ -x "$dir/bin/python" ] && "$dir/bin/python" -c "$check" 2>/dev/null; then exit 0; fi
rm -rf "$dir"
/usr/bin/python3 -m venv --system-site-packages "$dir"
"$dir/bin/python" -m pip install --quiet --no-deps --disable-pip-version-check 'tensorboard==2.20.0' 'absl-py==2.5.1'
"$dir/bin/python" -c "$check; print('tensorboard', tensorboard.__version__)"
