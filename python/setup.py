# setup.py — installs the Python binding `sop` (pure Python, ctypes) without PyPI:
#   python3 -m pip install --no-build-isolation --no-index ./python
# (Debian's python3-setuptools is enough). With SOP_BUNDLE_LIB=/path/to/libsop.so the library
# is copied into the package, so the installed module needs nothing else.
import os
import shutil

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
package_data = {}
bundle = os.environ.get("SOP_BUNDLE_LIB")
if bundle:
    shutil.copyfile(bundle, os.path.join(here, "sop", "libsop.so"))
    package_data["sop"] = ["libsop.so"]

setup(
    name="sop",
    version="0.1.0",
    description="Python binding of libsop: Python-side performance triage in-process",
    packages=["sop"],
    package_data=package_data,
    python_requires=">=3.8",
)
