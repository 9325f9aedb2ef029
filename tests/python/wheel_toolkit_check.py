"""kjit with no toolkit configured, in a venv holding NVIDIA's CUDA wheels (wheel_toolkit.sh): NVRTC,
nvJitLink and the headers all come from the wheels, not from the toolkit kjit was built with.
Usage: python wheel_toolkit_check.py CACHE_DIR"""
import os
import sys

for name in ("KJIT_CUDA_HOME", "CUDA_HOME", "CUDA_PATH"):
    assert not os.environ.get(name), f"{name} is set: this checks kjit with no toolkit configured"

import kjit  # noqa: E402

wheels = os.path.join(sys.prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages",
                      "nvidia", f"cu{kjit._cuda_major}")
assert os.path.isdir(os.path.join(wheels, "lib")), f"no wheels at {wheels}"
assert os.environ.get("KJIT_CUDA_HOME") == wheels, f"KJIT_CUDA_HOME={os.environ.get('KJIT_CUDA_HOME')!r}, not {wheels}"

cache = kjit.Cache(os.path.join(sys.argv[1], "cache"))
# A CCCL header (the nvidia-cuda-cccl wheel) and the runtime's vector types (nvidia-cuda-runtime).
source = """
#include <cuda/std/type_traits>
#include <vector_types.h>
template <typename T> __global__ void scale(T* x, T a) {
  static_assert(cuda::std::is_floating_point<T>::value, "");
  float2 unused{}; (void)unused;
  x[threadIdx.x] *= a;
}
"""
program = kjit.Program(source, name="wheel.cu", options=kjit.Options(std="c++17"), name_expressions=["scale<float>"])
looked = cache.lookup(program, arch="sm_90")
assert looked.source == "compiled", looked.source
binary = looked.binary
assert binary.cubin[:4] == b"\x7fELF", "no cubin"
assert "scale" in binary.lowered_name("scale<float>")
# Another arch (NVRTC makes its cubin), and a link by nvJitLink from the wheel (-dlto: NVRTC's LTO IR
# linked into the cubin; nvJitLink stays loaded only where a compile links with it).
assert cache.get(program, arch="sm_80").cubin[:4] == b"\x7fELF"
lto = kjit.Program(source, name="wheel_lto.cu", options=["-std=c++17", "-dlto"], name_expressions=["scale<float>"])
linked = cache.get(lto, arch="sm_80")
assert linked.cubin[:4] == b"\x7fELF"
assert linked.cubin_path == "nvjitlink-lto", linked.cubin_path

maps = open("/proc/self/maps").read()
loaded = sorted({line.split()[-1] for line in maps.splitlines()
                 if "libnvrtc" in line or "libnvJitLink" in line})
print("loaded:", *loaded, sep="\n  ")
for library in ("libnvrtc.so", "libnvJitLink.so"):
    assert any(path.startswith(wheels + "/") and library in path for path in loaded), f"{library} not from {wheels}"
assert all(path.startswith(wheels + "/") for path in loaded), "a CUDA library from outside the wheels"

again = cache.lookup(program, arch="sm_90")
assert again.source != "compiled" and again.key == looked.key, (again.source, again.key, looked.key)
print("ok: compiled and cached with NVRTC, nvJitLink and headers from", wheels)
