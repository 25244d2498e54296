# Source on the lent GPU machine, from the project's root, after scripts/gpu/fetch.sh filled
# .gpu-kit/ here and it travelled:  . scripts/gpu/env.sh
# Unpacks the kit's packages under $CLROOT (default /tmp/clroot; nothing outside it changes),
# registers the NVIDIA driver's OpenCL library with the carried ICD loader, and exports the
# paths to build and run against them. Fails (returns 1) when the driver has no OpenCL library.
CLROOT=${CLROOT:-/tmp/clroot}
mkdir -p "$CLROOT/vendors"
for f in .gpu-kit/debs/*.deb; do dpkg -x "$f" "$CLROOT"; done
# Debian's -dev links are absolute (libz.so -> /lib/.../libz.so.1.2.13): point them into the
# prefix. Static archives go: a shared library cannot link them (zlib's libz.a is not PIC).
find "$CLROOT" -type l | while read -r l; do
  t=$(readlink "$l"); case $t in /*) [ -e "$CLROOT$t" ] && ln -sfn "$CLROOT$t" "$l" ;; esac
done
find "$CLROOT" -name '*.a' -delete
# The driver's library: ldconfig knows it on a normal install; in containers the driver is
# often a separate mount (/usr/local/nvidia), which `find -xdev /` would not enter.
# CLG_GPU_VENDOR_LIB names another driver library (to try this script where there is no GPU).
clg_vendor=${CLG_GPU_VENDOR_LIB:-}
[ -n "$clg_vendor" ] || clg_vendor=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1/{print $NF; exit}')
[ -n "$clg_vendor" ] || clg_vendor=$(find /usr/local/nvidia /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib \
  /usr/local/cuda/compat -name 'libnvidia-opencl.so.1' 2>/dev/null | head -n 1)
if [ -z "$clg_vendor" ]; then
  echo "scripts/gpu/env.sh: no libnvidia-opencl.so.1 on this machine" >&2
  return 1 2>/dev/null || exit 1
fi
echo "$clg_vendor" > "$CLROOT/vendors/nvidia.icd"
clg_multi=$CLROOT/usr/lib/x86_64-linux-gnu
export OCL_ICD_VENDORS=$CLROOT/vendors
export LD_LIBRARY_PATH=$clg_multi${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CMAKE_PREFIX_PATH=$CLROOT/usr
export PKG_CONFIG_PATH=$clg_multi/pkgconfig:$CLROOT/usr/share/pkgconfig
export CPATH=$CLROOT/usr/include
export LIBRARY_PATH=$clg_multi
export PATH=$CLROOT/usr/bin:$PATH
export CLG_FASHION_MNIST_DIR=$PWD/.gpu-kit/fashion-mnist
echo "OpenCL driver: $clg_vendor"
