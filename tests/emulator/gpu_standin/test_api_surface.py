"""The CUDA API surface under the stand-in, call by call. scripts/api_probe.py makes every call in one process
with the stand-in on (4 x NVIDIA A10G, 24 GiB) and reports each result; the tests below judge them."""

from __future__ import annotations

import json
import sys

import pytest

GIB = 2**30


@pytest.fixture(scope="module")
def probed(module_standin) -> dict:
    standin = module_standin
    env = standin.environment(num_gpus=4, gpu_name="NVIDIA A10G", **{standin.env_module.GPU_MEMORY_GIB: "24"})
    result = standin.run([sys.executable, str(standin.scripts / "api_probe.py")], env)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_device_queries_answer_for_the_instance(probed):
    assert probed["device_queries"] == {
        "is_available": True, "device_count": 4, "name": "NVIDIA A10G (smtrain CPU stand-in)", "capability": [8, 6],
        "properties": {"name": "NVIDIA A10G (smtrain CPU stand-in)", "major": 8, "minor": 6,
                       "total_memory": 24 * GIB, "multi_processor_count": 80},
        "bf16": True, "bf16_native": True, "nccl_available": True, "accelerator": [True, "cuda", 4]}


def test_current_device_is_per_thread(probed):
    assert probed["current_device_per_thread"] == {
        "after_set_device": 2, "inside_device_context": 1, "after_device_context": 2, "new_thread": 0,
        "new_thread_after_set_device": 3, "main_thread_after_thread": 2}


def test_device_objects_by_index_name_emulated_gpus(probed):
    """A CPU build of torch refuses torch.device(0) ("Cannot access accelerator device when none is available");
    on the instance it is cuda:0."""
    assert probed["device_objects"] == {
        "index": "cuda:1", "current": "cuda:2", "no_index": "None", "isinstance": True,
        "tensor_device_isinstance": True, "torchscript": "cpu", "accelerator": ["cuda", 0],
        "placed_by_index_device": ["cpu"]}


def test_fsdp_v1_and_v2_wrap_and_step_on_the_current_device(probed):
    assert probed["fsdp_v1_and_v2_wrap_and_step"] == {"v1_compute_device": "cpu", "v1_grad": True,
                                                      "v2_grad": True}


def test_refused_cuda_classes_still_serve_in_annotations(probed):
    assert probed["cuda_classes_in_annotations"] == ["torch.cuda.CUDAGraph | None",
                                                     "torch.cuda.ExternalStream | None"]


def test_placement_every_way_lands_on_the_cpu(probed):
    placements = dict(probed["placement"])
    assert placements.pop("device_object_stays_cuda") == "cuda:1"
    assert {name: set(where) for name, where in placements.items()} == {name: {"cpu"} for name in placements}


def test_placement_in_a_background_thread(probed):
    assert probed["background_thread_placement"] == {"zeros": ["cpu"], "to": ["cpu"]}


def test_placement_moving_copies_as_a_host_to_device_copy_does(probed):
    assert probed["moved_tensor_is_a_copy"] == {"original": [0, 0, 0], "moved": [1, 1, 1], "also_moved": [2, 2, 2]}


def test_placement_on_a_gpu_the_instance_lacks_fails_as_cuda_does(probed):
    error = probed["invalid_device_ordinal"]
    assert error["error"] == "RuntimeError"
    assert error["message"].startswith("CUDA error: invalid device ordinal 4")
    assert "4 GPUs per host" in error["message"]


def test_placement_default_device_contexts(probed):
    assert probed["device_context_and_default_device"] == {
        "with_cuda_device": ["cpu"], "with_meta_device": ["meta"], "set_default_device": ["cpu"]}


def test_load_maps_gpu_locations_to_the_cpu(probed):
    assert probed["load_map_location"] == {"string": ["cpu"], "device": ["cpu"], "dict": ["cpu"],
                                           "storage_cuda": ["cpu"]}
    assert probed["load_checkpoint_saved_on_gpu"] == ["cpu"]


def test_dataloader_pin_memory_pins_without_warnings(probed):
    assert probed["dataloader_pin_memory"] == {"batches": [[0, 1, 2, 3], [4, 5, 6, 7]], "warnings": []}


def test_streams_and_events(probed):
    assert set(probed["streams_and_events"].values()) == {True}
    assert probed["elapsed_time_without_timing"] == {
        "error": "RuntimeError", "message": "Both events must be created with argument 'enable_timing=True'."}


def test_memory_statistics_read_zero_and_the_gpu_is_free(probed):
    assert probed["memory_statistics"] == {"allocated": 0, "max_allocated": 0, "reserved": 0, "max_reserved": 0,
                                           "mem_get_info": [24 * GIB, 24 * GIB], "memory_module": 0,
                                           "stats_peak": 0, "stats_ooms": 0, "stats_count": 9 * 3 * 4 + 2 * 4 + 5}


def test_legacy_cuda_tensor_types_make_and_name_cpu_tensors(probed):
    """A CPU build refuses them: "type torch.cuda.FloatTensor not available. Torch not compiled with CUDA"."""
    assert probed["legacy_tensor_types"] == {
        "constructed": [[4, 1], 4.0], "from_list": "torch.int64", "isinstance": True, "cast_by_class": "torch.float32",
        "cast_by_name": "torch.float16", "default_type": "torch.float32", "dtype_cast": "torch.float64"}


def test_a_memory_snapshot_is_recorded_and_dumped_empty(probed):
    """A CPU build of torch has no CUDA allocator to record: torch.cuda.memory's calls raised AttributeError."""
    assert probed["memory_snapshot"] == {"segments": [], "device_traces": [[], [], [], []]}


def test_random_state_round_trips(probed):
    assert probed["random_state"] == {"restored": True, "count": 4, "initial_seed_after_torch_manual_seed": 3}


def test_a_generator_made_for_a_gpu_draws_and_restores_its_state(probed):
    """torch's CPU build refuses torch.Generator(device="cuda") ("Cannot get CUDA generator without ATen_cuda
    library"); here it is a CPU generator, and every generator is still a torch.Generator."""
    assert probed["gpu_generator"] == {"device": "cpu", "restored": True, "on_gpu_3": "cpu",
                                       "isinstance": [True, True, True]}


def test_autocast_cuda_fp16_runs_as_cpu_bfloat16(probed):
    assert probed["autocast_fp16"] == {"dtype": "torch.bfloat16", "enabled_inside": True, "enabled_after": False,
                                       "legacy_dtype": "torch.bfloat16"}


def test_autocast_state_restored_by_device_type_is_the_state_read(probed):
    """torch.compile restores what `is_autocast_enabled("cuda")` read with `set_autocast_enabled("cuda", ...)`; a
    setter left on CUDA's own state changed it, and every graph compiled inside an eager autocast region failed
    with "Global autocast(cuda)_enabled state changed while dynamo tracing"."""
    assert probed["autocast_state_saved_and_restored"] == {"unchanged": True, "enabled": True,
                                                           "enabled_after": False}


def test_grad_scalers_for_cuda_step(probed):
    assert probed["grad_scalers"] == {"amp": {"scale": 65536.0, "weights_finite": True},
                                      "cuda_amp": {"scale": 65536.0, "weights_finite": True}}


def test_nccl_groups_run_over_gloo_with_ddp_data_parallel_and_sync_batch_norm(probed):
    assert probed["process_group_and_parallel_wrappers"] == {
        "backend": "gloo", "new_group_backend": "gloo", "ddp_grad": True, "data_parallel_device_ids": [0, 1, 2, 3],
        "data_parallel_same_output": True, "sync_batch_norm_same_output": True}


def test_bf16_gradient_compression_runs_and_nccl_has_a_version(probed):
    """torch refuses DDP's bf16_compress_hook without CUDA and NCCL 2.10+; torch.cuda.nccl.version() raised."""
    assert probed["bf16_compression_hook"] == {"nccl_version": [2, 21, 5], "gradient_as_compressed": True}


def test_a_tensors_device_index_handed_back_names_its_gpu(probed):
    """A CPU tensor's get_device() is -1, which CUDA refuses as a device ("invalid device ordinal -1")."""
    assert probed["device_index_handed_back"] == {
        "get_device": -1, "made": ["cpu", "cpu", "cpu"], "device_object": "cuda", "synchronize": None,
        "current_after": 2}


def test_nvml_queries_answer_without_nvml(probed):
    """A CPU build raises ModuleNotFoundError ("nvidia-ml-py does not seem to be installed") for each."""
    assert probed["nvml_queries"] == {"utilization_is_percent": True, "sensors": [0, 0, 0, 0, 0],
                                      "processes": ["GPU:1", True]}


def test_compile_asking_for_cuda_graphs_says_once_that_it_runs_without_them(probed):
    """inductor skips CUDA graphs for CPU tensors and says so only to a torch log that is off by default: before,
    mode="reduce-overhead" trained here without a word that no graph was captured."""
    result = probed["compile_asking_for_cuda_graphs"]
    assert result["compiled"] == ["OptimizedModule"] * 4
    assert [said.split(" compiles ")[0] for said in result["said"]] == [
        "smtrain CPU stand-in: torch.compile(mode='reduce-overhead')",
        "smtrain CPU stand-in: torch.compile(options={'triton.cudagraphs': True})"]
    assert "without CUDA graphs" in result["said"][0] and "checked only on the instance" in result["said"][0]


@pytest.mark.parametrize(("probe", "call"), [
    ("unsupported_cuda_graph", "torch.cuda.CUDAGraph"),
    ("unsupported_graph_context", "torch.cuda.graph"),
    ("unsupported_nccl", "torch.cuda.nccl.all_reduce"),
    ("unsupported_runtime_call", "torch.cuda.ipc_collect()"),
    ("unsupported_cuda_extension", "torch.utils.cpp_extension.load_inline('kernels') with CUDA sources"),
    ("unsupported_triton", "import triton (Triton kernels)"),
])
def test_unsupported_call_names_itself_and_the_standin(probed, probe, call):
    message = probed[probe]["message"]
    assert message.startswith(f"{call} needs a real GPU: this process runs on smtrain's CPU stand-in for CUDA")
    assert "To fix:" in message


def test_unsupported_triton_is_an_import_error(probed):
    assert probed["unsupported_triton"]["import_error"] is True  # code probing for Triton carries on


def test_nvtx_ranges_do_nothing(probed):
    assert probed["nvtx_ranges"] is True
