"""Build the one compiled extension, rdmasim._core: the C core under csrc/ plus a thin Cython layer."""

import glob
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
C_SOURCES = sorted(
    os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "csrc", "**", "*.c"), recursive=True)
)
# Headers and .pxi files: a change to one rebuilds the extension (setuptools looks only at sources
# otherwise, and a header-only edit such as a struct layout left a stale build).
DEPENDS = sorted(
    os.path.relpath(p, HERE)
    for pattern in ("csrc/**/*.h", "csrc/**/*.def", "rdmasim/*.pxi", "rdmasim/*.pxd")
    for p in glob.glob(os.path.join(HERE, pattern), recursive=True)
)

# RDMASIM_SANITIZE=1 builds with ASan/UBSan (CI sanitizer step); RDMASIM_DEBUG=1 with -O0 -g.
extra_compile = ["-std=c11", "-O3", "-Wall", "-Wextra", "-Wno-unused-parameter"]
extra_link: list[str] = []
# Calls between the C files bind locally (no PLT through semantic interposition) and nothing but the
# module's PyInit__core (PyMODINIT_FUNC: default visibility) is exported, so LTO may inline freely.
extra_compile += ["-fno-semantic-interposition", "-fvisibility=hidden"]
if not (os.environ.get("RDMASIM_DEBUG") or os.environ.get("RDMASIM_SANITIZE")):
    extra_compile += ["-flto=auto"]
    extra_link += ["-flto=auto", "-O3"]
if os.environ.get("RDMASIM_DEBUG"):
    extra_compile += ["-O0", "-g"]
if os.environ.get("RDMASIM_SANITIZE"):
    flags = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g"]
    extra_compile += flags
    extra_link += flags

# RDMASIM_MUTANTS=1 compiles in the deliberately wrong behaviours of rdmasim.testing.mutants (testing only).
macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
if os.environ.get("RDMASIM_MUTANTS"):
    macros.append(("RDMASIM_MUTANTS", "1"))

ext = Extension(
    "rdmasim._core",
    sources=["rdmasim/_core.pyx", *C_SOURCES],
    depends=DEPENDS,
    include_dirs=["csrc/include", "csrc", numpy.get_include()],
    define_macros=macros,
    extra_compile_args=extra_compile,
    extra_link_args=extra_link,
)


class BuildPyWithHeaders(build_py):
    """Install the public C headers as rdmasim/include/rdmasim/ (rdmasim.get_include(): what a C
    congestion-control plug-in compiles against, rdmasim.cc_plugin)."""

    def run(self) -> None:
        super().run()
        dst = os.path.join(self.build_lib, "rdmasim", "include", "rdmasim")
        self.mkpath(dst)
        for p in sorted(glob.glob(os.path.join(HERE, "csrc", "include", "rdmasim", "*"))):
            self.copy_file(p, dst)


class BuildWithPreload(build_ext):
    """Also build rdmasim/fabricd/librdmasim_ibverbs.so (C verbs programs on the emulated fabric,
    docs/c-programs.md) when the libibverbs headers and a compiler are there; without them the
    install goes on and ``rdmasim exec`` says which package to install."""

    def run(self) -> None:
        super().run()
        out_dir = HERE if self.inplace else self.build_lib
        out = os.path.join(out_dir, "rdmasim", "fabricd", "librdmasim_ibverbs.so")
        try:
            import importlib.util

            spec = importlib.util.spec_from_file_location(
                "_rdmasim_launch_build", os.path.join(HERE, "rdmasim", "fabricd", "build_lib.py"))
            assert spec and spec.loader
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            mod.build(out)
        except Exception as exc:  # noqa: BLE001 - optional part: say why and go on
            print(f"rdmasim: librdmasim_ibverbs.so not built ({exc}); rdmasim exec will say what to install")


setup(ext_modules=cythonize([ext], language_level=3, compiler_directives={"embedsignature": True}),
      cmdclass={"build_py": BuildPyWithHeaders, "build_ext": BuildWithPreload})
