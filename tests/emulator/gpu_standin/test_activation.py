"""How the stand-in is switched on and off: by the environment alone, through sitecustomize, chaining to the
sitecustomize it shadows, never importing torch itself; and the torch-free modules the emulator reads."""

from __future__ import annotations

import json
import subprocess

import pytest

REPORT = ("import json, sys, torch; print(json.dumps({'cuda': torch.cuda.is_available(), "
          "'patched': 'smtrain_gpu_standin.patches' in sys.modules, 'tensor_to': type(torch.Tensor.to).__name__}))")
# Without importing torch: whether the stand-in waits for it, and whether a user's sitecustomize ran.
ARMED = ("import os, sys; print(any(type(f).__name__ == '_PostImportFinder' for f in sys.meta_path), "
         "os.environ.get('USER_SITECUSTOMIZE'))")


def _report(output: str) -> dict:
    return json.loads(output.strip().splitlines()[-1])


def test_sitecustomize_without_variable_changes_nothing(standin):
    result = standin.python("-c", REPORT, num_gpus=None)
    assert _report(result.stdout) == {"cuda": False, "patched": False, "tensor_to": "method_descriptor"}
    assert result.stderr == ""


def test_the_stand_in_patches_an_older_torch_that_lacks_the_newer_switches(older_torch):
    """Debian's torch 1.13, as the public examples run it, lacks what later torch added (the memory-efficient and
    cuDNN attention switches): every patch of the stand-in must hold on it, or every GPU script fails at import."""
    assert older_torch["report"] == {"cuda": True, "patched": True, "tensor_to": "function"}


AMP_RECIPE = """
import json, torch
model = torch.nn.Linear(4, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.cuda.amp.GradScaler()
before = model.weight.detach().clone()
with torch.cuda.amp.autocast():
    loss = model(torch.randn(8, 4, device="cuda")).float().pow(2).mean()
scaler.scale(loss).backward()
scaler.step(optimizer)
scaler.update()
print(json.dumps({"stepped": not torch.equal(before, model.weight), "scale": scaler.get_scale()}))
"""


# Each part in its own namespace, its last line its answer or its traceback, so that one failing leaves the other's.
OLDER_TORCH_PARTS = """
import json, sys, traceback
for name, code in json.loads(sys.argv[1]).items():
    try:
        exec(code, {})
    except BaseException:
        print(json.dumps({name: traceback.format_exc()}), flush=True)
"""


@pytest.fixture(scope="module")
def older_torch(module_standin) -> dict:
    """Under Debian's torch 1.13 with the stand-in on, in one process (each start imports that torch): the report
    after the attention switch the stand-in adds, and the AMP recipe's answer."""
    older = "/usr/bin/python3"
    if subprocess.run([older, "-c", "import torch"], capture_output=True, check=False).returncode:
        pytest.skip(f"{older} has no torch (Debian: apt-get install python3-torch)")
    parts = {"report": REPORT + "; torch.backends.cuda.enable_flash_sdp(False)", "amp": AMP_RECIPE}
    result = module_standin.run([older, "-c", OLDER_TORCH_PARTS, json.dumps(parts)], module_standin.environment(),
                                check=False)
    answers = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(answers) == 2, (result.returncode, result.stdout, result.stderr)
    report, amp = answers
    return {"report": report, "amp": amp}


def test_an_older_torch_runs_the_amp_recipe_of_its_docs(older_torch):
    """torch.cuda.amp.GradScaler of torch before 2.3 asserted `outputs.is_cuda` at the first `scaler.scale(loss)`:
    the PyTorch docs' AMP recipe failed under Debian's torch 1.13. It runs disabled, as torch runs it without CUDA."""
    assert older_torch["amp"] == {"stepped": True, "scale": 1.0}


def test_sitecustomize_zero_gpus_means_off(standin):
    assert standin.python("-c", ARMED, num_gpus=0).stdout.split() == ["False", "None"]


def test_sitecustomize_with_variable_patches_torch_when_imported(precision_probes):
    assert _report(precision_probes["report"]) == {"cuda": True, "patched": True, "tensor_to": "function"}


def test_sitecustomize_never_imports_torch_itself(standin):
    result = standin.python("-c", "import sys; print('torch' in sys.modules)", num_gpus=4)
    assert result.stdout.strip() == "False"


def test_sitecustomize_runs_the_one_it_shadows(standin, tmp_path):
    user_dir = tmp_path / "user"
    user_dir.mkdir()
    (user_dir / "sitecustomize.py").write_text("import os\nos.environ['USER_SITECUSTOMIZE'] = 'ran'\n")
    for num_gpus, armed in ((None, "False"), (4, "True")):
        result = standin.python("-c", ARMED, num_gpus=num_gpus, pythonpath=str(user_dir))
        assert result.stdout.split() == [armed, "ran"]


def test_sitecustomize_malformed_count_stops_with_the_fix(standin):
    env = standin.environment(num_gpus=None, **{standin.env_module.NUM_GPUS: "four"})
    result = standin.run(["python", "-c", "print('started')"], env, check=False)
    assert result.returncode != 0
    assert "started" not in result.stdout
    assert "SMTRAIN_GPU_STANDIN='four' is not a positive number. To fix:" in result.stderr


def test_env_read_parses_the_variables(standin):
    env = standin.env_module
    settings = env.read({env.NUM_GPUS: "8", env.GPU_NAME: "A100", env.GPU_MEMORY_GIB: "80"})
    assert (settings.num_gpus, settings.gpu_name, settings.memory_gib) == (8, "A100", 80.0)
    assert env.read({}) is None
    assert env.read({env.NUM_GPUS: "1"}).gpu_name == "GPU"
    assert env.read({env.NUM_GPUS: "1"}).autocast_in_float32 is False
    assert env.read({env.NUM_GPUS: "1", env.AUTOCAST: "float32"}).autocast_in_float32 is True
    with pytest.raises(env.SettingsError, match="SMTRAIN_GPU_STANDIN_AUTOCAST='fp8' is not 'float32'. To fix:"):
        env.read({env.NUM_GPUS: "1", env.AUTOCAST: "fp8"})


AUTOCAST_PROBE = """
import json, torch
layer = torch.nn.Linear(4, 4).cuda()
converted = torch.nn.Linear(4, 4).cuda().to(torch.bfloat16)
with torch.autocast("cuda", dtype=torch.float16):
    out = layer(torch.randn(2, 4, device="cuda"))
    from_half = layer(torch.randn(2, 4, device="cuda").half())
    from_converted = converted(torch.randn(2, 4, device="cuda", dtype=torch.bfloat16))
    kept = converted.weight.dtype
    enabled = torch.is_autocast_enabled()
    with torch.autocast("cuda", enabled=False):
        try:
            layer(torch.randn(2, 4, device="cuda").half())
            uncast = "ran"
        except RuntimeError:
            uncast = "dtype mismatch"
with torch.autocast("cpu", dtype=torch.bfloat16):
    asked_for_cpu = layer(torch.randn(2, 4))
print(json.dumps({"autocast": str(out.dtype), "float16 input": str(from_half.dtype),
                  "converted module": str(from_converted.dtype), "its weight": str(kept), "enabled": enabled,
                  "autocast(enabled=False)": uncast, "cpu_autocast": str(asked_for_cpu.dtype)}))
"""


POLICY_PROBE = """
import json, torch
from torch.distributed.fsdp import MixedPrecisionPolicy
policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16, output_dtype=torch.bfloat16)
print(json.dumps({"param_dtype": str(policy.param_dtype), "reduce_dtype": str(policy.reduce_dtype),
                  "output_dtype": str(policy.output_dtype)}))
"""


COMPILE_PROBE = """
import json, torch
layer = torch.nn.Linear(4, 4).cuda()
def step(x):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return layer(x).float().sum()
x = torch.randn(2, 4, device="cuda")
inside = torch.compile(step, backend="eager")
first, again = inside(x).item(), inside(x).item()
around = torch.compile(lambda x: layer(x.half()).sum(), backend="eager")
with torch.autocast("cuda", dtype=torch.float16):
    wrapped = around(x)
print(json.dumps({"region inside, as eager": abs(first - step(x).item()) < 1e-3 and first == again,
                  "region around": str(wrapped.dtype)}))
"""


@pytest.fixture(scope="module", params=["float32", ""], ids=["float32", "exact"])
def precision_probes(request, module_standin) -> dict:
    """The stand-in's report (the first import of torch), the autocast, FSDP policy and torch.compile probes, in
    one process per autocast setting (each starts torch), each its own part (`Standin.parts`)."""
    env = module_standin.environment(**{module_standin.env_module.AUTOCAST: request.param})
    outputs = module_standin.parts([("report", REPORT, []), ("autocast", AUTOCAST_PROBE, []),
                                    ("policy", POLICY_PROBE, []), ("compile", COMPILE_PROBE, [])], env)
    answers = {name: module_standin.json_lines(stdout)[-1:] or [stderr] for name, (stdout, stderr) in outputs.items()}
    return {"autocast": request.param, "report": outputs["report"][0], "autocast probe": answers["autocast"][0],
            "policy probe": answers["policy"][0], "compile probe": answers["compile"][0]}


AUTOCAST_EXPECTED = {
    "float32": {"autocast": "torch.float32", "float16 input": "torch.float32", "converted module": "torch.float32",
                "its weight": "torch.bfloat16", "enabled": False, "autocast(enabled=False)": "dtype mismatch",
                "cpu_autocast": "torch.bfloat16"},
    "": {"autocast": "torch.bfloat16", "float16 input": "torch.bfloat16", "converted module": "torch.bfloat16",
         "its weight": "torch.bfloat16", "enabled": True, "autocast(enabled=False)": "dtype mismatch",
         "cpu_autocast": "torch.bfloat16"},
}


def test_cuda_autocast_computes_in_float32_only_when_asked(precision_probes):
    """float32 changes CUDA autocast regions only, and casts there as autocast does (a float16 input to a float32
    layer works, as on the GPU, in float32); what the script converts keeps its dtype, a region nested with
    `enabled=False` casts nothing (a dtype mismatch fails as on the GPU), CPU autocast the script asks for stays."""
    assert precision_probes["autocast probe"] == AUTOCAST_EXPECTED[precision_probes["autocast"]]


def test_a_compiled_function_with_a_cuda_autocast_region_inside_compiles_in_either_setting(precision_probes):
    """torch.compile enters a region of the function it traces for real, then builds its guards once tracing has
    left it: in float32, a region recorded while tracing made the guards read a region the eager code never opened
    (IndexError: list index out of range at every compile of such a step). A region open around the compiled call
    still casts its float16 input, in float32 (nanoGPT compiles its model inside one)."""
    around = {"float32": "torch.float32", "": "torch.bfloat16"}[precision_probes["autocast"]]
    assert precision_probes["compile probe"] == {"region inside, as eager": True, "region around": around}


def test_notice_names_what_is_replaced_and_what_is_not_checked(standin):
    notice = standin.torch_free_module("notice").start_of_run_notice(4, "NVIDIA A10G")
    assert "4 x NVIDIA A10G per host" in notice
    for unchecked in ("custom CUDA and Triton kernels", "NCCL/EFA behaviour", "GPU memory limits",
                      "fp16 numerics", "speed"):
        assert unchecked in notice


def test_an_fsdp_precision_policy_computes_in_float32_where_autocast_does(precision_probes):
    """FSDP2's MixedPrecisionPolicy is a precision policy like autocast: the FSDP example's first step came after
    104 s with it in float32 on this AVX2-only CPU, and not within 500 s in emulated bfloat16. Its output dtype goes
    with the parameters' (the policy Accelerate builds for bf16 casts outputs to bf16, which float32 layers then
    refuse); the gradients' reduction keeps the dtype asked for."""
    computed = {"float32": "None", "": "torch.bfloat16"}[precision_probes["autocast"]]
    assert precision_probes["policy probe"] == {"param_dtype": computed, "reduce_dtype": "torch.bfloat16",
                                                "output_dtype": computed}
