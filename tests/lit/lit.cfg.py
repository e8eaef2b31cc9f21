# Compiler tests as text: an IR file in (.nir), the printed IR, plan or LLVM
# IR out, checked with FileCheck.
import os
import lit.formats

config.name = "nanoc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".nir"]
config.test_source_root = os.path.dirname(__file__)
config.substitutions.append(("%nanoc", config.nanoc))
config.substitutions.append(("%nanort-inspect", config.nanort_inspect))
config.substitutions.append(("FileCheck", config.filecheck))
config.substitutions.append(("%python", config.python))

# GPU tests (REQUIRES: ptxas) run where the CUDA toolkit's ptxas is.
import shutil

if os.environ.get("NANOC_PTXAS") or shutil.which("ptxas") or os.path.exists(
        "/usr/local/cuda/bin/ptxas"):
    config.available_features.add("ptxas")
# Inputs/ holds files that tests read, not tests.
config.excludes = ["Inputs"]
