"""Calls the CUDA API surface that GPU scripts use, each call on its own, and prints one JSON object:
probe name -> what it returned (JSON-able), or {"error": type, "message": ...} when it raised.

    SMTRAIN_GPU_STANDIN=4 SMTRAIN_GPU_STANDIN_NAME="NVIDIA A10G" python api_probe.py

Run in a subprocess by tests/emulator/gpu_standin/test_api_surface.py, so that the stand-in never patches pytest's torch.
"""

import io
import json
import os
import threading
import warnings

import torch
import torch.distributed as dist

PROBES = {}


def probe(function):
    PROBES[function.__name__] = function
    return function


def devices_of(*tensors):
    return [str(tensor.device) for tensor in tensors]


@probe
def device_queries():
    properties = torch.cuda.get_device_properties(1)
    return {"is_available": torch.cuda.is_available(), "device_count": torch.cuda.device_count(),
            "name": torch.cuda.get_device_name(), "capability": list(torch.cuda.get_device_capability(0)),
            "properties": {"name": properties.name, "major": properties.major, "minor": properties.minor,
                           "total_memory": properties.total_memory,
                           "multi_processor_count": properties.multi_processor_count},
            "bf16": torch.cuda.is_bf16_supported(), "bf16_native": torch.cuda.is_bf16_supported(False),
            "nccl_available": dist.is_nccl_available(),
            "accelerator": [torch.accelerator.is_available(), str(torch.accelerator.current_accelerator()),
                            torch.accelerator.device_count()]}


@probe
def current_device_per_thread():
    torch.cuda.set_device(2)
    seen = {"after_set_device": torch.cuda.current_device()}
    with torch.cuda.device(1):
        seen["inside_device_context"] = torch.cuda.current_device()
    seen["after_device_context"] = torch.cuda.current_device()

    def other_thread():
        seen["new_thread"] = torch.cuda.current_device()
        torch.cuda.set_device("cuda:3")
        seen["new_thread_after_set_device"] = torch.cuda.current_device()

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    seen["main_thread_after_thread"] = torch.cuda.current_device()
    torch.cuda.set_device(0)
    return seen


@probe
def placement():
    x = torch.arange(4.0)
    model = torch.nn.Linear(2, 2)
    return {
        "to_int": devices_of(x.to(1)), "to_string": devices_of(x.to("cuda:1")), "cuda": devices_of(x.cuda()),
        "to_device_object": devices_of(x.to(torch.device("cuda", 3))),
        "to_keyword": devices_of(x.to(device="cuda", dtype=torch.float16)),
        "non_blocking": devices_of(x.to("cuda", non_blocking=True)),
        "zeros": devices_of(torch.zeros(2, device="cuda")),
        "tensor": devices_of(torch.tensor([1.0], device="cuda:0")),
        "randn_device_object": devices_of(torch.randn(2, device=torch.device("cuda", 1))),
        "zeros_like": devices_of(torch.zeros_like(x, device="cuda")),
        "new_ones": devices_of(x.new_ones(2, device=0)),
        "pin_memory": devices_of(x.pin_memory()),
        "module_to_int": devices_of(*model.to(0).parameters()),
        "module_cuda": devices_of(*model.cuda(1).parameters()),
        "module_device_keyword": devices_of(*torch.nn.Linear(2, 2, device="cuda:1").parameters()),
        "device_object_stays_cuda": str(torch.device("cuda", 1)),
    }


@probe
def legacy_tensor_types():
    """Older scripts' torch.cuda.FloatTensor and kin: as constructors, classes and names."""
    Tensor = torch.cuda.FloatTensor  # noqa: N806 (PyTorch-GAN's spelling)
    valid = Tensor(4, 1).fill_(1.0)
    torch.set_default_tensor_type("torch.cuda.FloatTensor")
    default = torch.zeros(2).dtype
    torch.set_default_tensor_type(torch.FloatTensor)
    return {"constructed": [list(valid.shape), valid.sum().item()], "from_list": str(torch.cuda.LongTensor([1]).dtype),
            "isinstance": isinstance(torch.randn(2).cuda(), torch.cuda.FloatTensor),
            "cast_by_class": str(torch.arange(3).type(torch.cuda.FloatTensor).dtype),
            "cast_by_name": str(torch.arange(3).type("torch.cuda.HalfTensor").dtype),
            "default_type": str(default), "dtype_cast": str(torch.arange(3).type(torch.float64).dtype)}


@probe
def moved_tensor_is_a_copy():
    x = torch.zeros(3)
    moved = x.to("cuda")
    moved.add_(1)
    also_moved = x.cuda()
    also_moved.add_(2)
    return {"original": x.tolist(), "moved": moved.tolist(), "also_moved": also_moved.tolist()}


@probe
def invalid_device_ordinal():
    return devices_of(torch.zeros(1).to("cuda:4"))


@probe
def device_context_and_default_device():
    with torch.device("cuda:1"):
        inside = torch.empty(2)
    with torch.device("meta"):
        meta = torch.nn.Linear(2, 2)
    torch.set_default_device("cuda")
    default = torch.ones(1)
    torch.set_default_device(None)
    return {"with_cuda_device": devices_of(inside), "with_meta_device": devices_of(meta.weight),
            "set_default_device": devices_of(default)}


@probe
def load_map_location():
    buffer = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buffer)
    results = {}
    for name, map_location in {"string": "cuda:1", "device": torch.device("cuda", 0), "dict": {"cpu": "cuda:1"},
                               "storage_cuda": lambda storage, location: storage.cuda(1)}.items():
        buffer.seek(0)
        results[name] = devices_of(torch.load(buffer, map_location=map_location)["w"])
    return results


@probe
def load_checkpoint_saved_on_gpu():
    saving_on_gpu = [True]
    torch.serialization.register_package(0, lambda storage: "cuda:0" if saving_on_gpu[0] else None,
                                         lambda storage, location: None)
    buffer = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buffer)
    saving_on_gpu[0] = False
    buffer.seek(0)
    return devices_of(torch.load(buffer)["w"])


@probe
def background_thread_placement():
    seen = {}

    def prefetch():
        try:
            seen["zeros"] = devices_of(torch.zeros(2, device="cuda"))
            seen["to"] = devices_of(torch.ones(2).to("cuda:1"))
        except Exception as error:  # reported to the main thread
            seen["error"] = repr(error)

    thread = threading.Thread(target=prefetch)
    thread.start()
    thread.join()
    return seen


@probe
def dataloader_pin_memory():
    dataset = torch.utils.data.TensorDataset(torch.arange(8.0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = torch.utils.data.DataLoader(dataset, batch_size=4, pin_memory=True)
        batches = [batch[0].tolist() for batch in loader]
    return {"batches": batches, "warnings": [str(warning.message) for warning in caught]}


@probe
def streams_and_events():
    default = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    with torch.cuda.stream(side):
        inside = torch.cuda.current_stream() is side
        x = torch.ones(4).to("cuda", non_blocking=True)
    default.wait_stream(side)
    x.record_stream(torch.cuda.current_stream())
    end.record()
    torch.cuda.synchronize()
    elapsed = start.elapsed_time(end)
    return {"inside_stream_context": inside, "restored": torch.cuda.current_stream() is default,
            "default_is_default": default is torch.cuda.default_stream(), "elapsed_ms_non_negative": elapsed >= 0,
            "query": side.query() and end.query(), "event_from_stream": side.record_event().query()}


@probe
def elapsed_time_without_timing():
    start, end = torch.cuda.Event(), torch.cuda.Event()
    start.record()
    end.record()
    return start.elapsed_time(end)


@probe
def memory_statistics():
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.empty_cache()
    return {"allocated": torch.cuda.memory_allocated(), "max_allocated": torch.cuda.max_memory_allocated(0),
            "reserved": torch.cuda.memory_reserved(), "max_reserved": torch.cuda.max_memory_reserved(),
            "mem_get_info": list(torch.cuda.mem_get_info()), "memory_module": torch.cuda.memory.memory_allocated(),
            "stats_peak": torch.cuda.memory_stats()["allocated_bytes.all.peak"],
            "stats_ooms": torch.cuda.memory_stats(0)["num_ooms"], "stats_count": len(torch.cuda.memory_stats())}


@probe
def memory_snapshot():
    """PyTorch's recipe for what holds GPU memory: record the allocations, dump a snapshot for memory_viz."""
    import pickle
    import tempfile

    torch.cuda.memory._record_memory_history(max_entries=1000)
    torch.randn(64, 64, device="cuda") @ torch.randn(64, 64, device="cuda")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "snapshot.pickle")
        torch.cuda.memory._dump_snapshot(path)
        with open(path, "rb") as dumped:
            snapshot = pickle.load(dumped)
    torch.cuda.memory._record_memory_history(enabled=None)
    return snapshot


@probe
def gpu_generator():
    generator = torch.Generator(device="cuda").manual_seed(5)
    state = generator.get_state()
    first = torch.randn(3, device="cuda", generator=generator)
    generator.set_state(state)
    again = torch.randn(3, device="cuda", generator=generator)
    return {"device": str(generator.device), "restored": torch.equal(first, again),
            "on_gpu_3": str(torch.Generator(torch.device("cuda", 3)).device),
            "isinstance": [isinstance(item, torch.Generator) for item in (generator, torch.default_generator,
                                                                          torch.cuda.default_generators[0])]}


@probe
def random_state():
    torch.cuda.manual_seed(1)
    torch.cuda.manual_seed_all(2)
    states = torch.cuda.get_rng_state_all()
    torch.cuda.seed_all()
    torch.cuda.set_rng_state_all(states)
    restored = all(torch.equal(a, b) for a, b in zip(states, torch.cuda.get_rng_state_all()))
    torch.manual_seed(3)
    return {"restored": restored, "count": len(states),
            "initial_seed_after_torch_manual_seed": torch.cuda.initial_seed()}


@probe
def autocast_fp16():
    layer = torch.nn.Linear(4, 4).cuda()
    with torch.autocast("cuda", dtype=torch.float16):
        out = layer(torch.randn(2, 4, device="cuda"))
        enabled = torch.is_autocast_enabled()
    with torch.cuda.amp.autocast():
        legacy = layer(torch.randn(2, 4).cuda())
    return {"dtype": str(out.dtype), "enabled_inside": enabled, "enabled_after": torch.is_autocast_enabled(),
            "legacy_dtype": str(legacy.dtype)}


@probe
def autocast_state_saved_and_restored():
    """What torch.compile does around each graph traced inside an eager CUDA autocast region (nanoGPT's train.py):
    it saves the state with the getters, restores it with the setters, then checks that no global state changed."""
    from torch._C._dynamo.guards import GlobalStateGuard

    with torch.autocast("cuda", dtype=torch.bfloat16):
        unchanged = GlobalStateGuard()
        torch.set_autocast_enabled("cuda", torch.is_autocast_enabled("cuda"))
        torch.set_autocast_dtype("cuda", torch.get_autocast_dtype("cuda"))
        torch.set_autocast_enabled(torch.is_autocast_enabled())
        torch.set_autocast_enabled(device_type="cuda", enabled=torch.is_autocast_enabled("cuda"))
        inside = {"unchanged": unchanged.check(), "enabled": torch.is_autocast_enabled("cuda")}
    return {**inside, "enabled_after": torch.is_autocast_enabled("cuda")}


@probe
def grad_scalers():
    results = {}
    for name, scaler in {"amp": torch.amp.GradScaler("cuda"), "cuda_amp": torch.cuda.amp.GradScaler()}.items():
        layer = torch.nn.Linear(4, 1).cuda()
        optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = layer(torch.randn(8, 4).cuda()).float().pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        results[name] = {"scale": scaler.get_scale(), "weights_finite": bool(layer.weight.isfinite().all())}
    return results


@probe
def device_objects():
    """torch.device(<index>) is resolved in C++ against the compiled accelerator: CUDA on the instance."""
    torch.cuda.set_device(2)
    current = torch.device(torch.cuda.current_device())  # FSDP v1's compute device
    torch.cuda.set_device(0)
    scripted = torch.jit.script(lambda_device)
    return {"index": str(torch.device(1)), "current": str(current), "no_index": repr(torch.device("cuda").index),
            "isinstance": isinstance(torch.device(0), torch.device) and isinstance(torch.device("cpu"), torch.device),
            "tensor_device_isinstance": isinstance(torch.zeros(1).device, torch.device),
            "torchscript": str(scripted(torch.ones(1)).device),
            "accelerator": [str(torch.accelerator.current_accelerator()), torch.accelerator.current_device_index()],
            "placed_by_index_device": devices_of(torch.ones(1, device=torch.device(3)))}


def lambda_device(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.device("cpu"))


@probe
def fsdp_v1_and_v2_wrap_and_step():
    from torch.distributed.fsdp import FullyShardedDataParallel, fully_shard

    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    try:
        torch.cuda.set_device(1)
        v1 = FullyShardedDataParallel(torch.nn.Linear(4, 2).cuda())  # computes torch.device(current_device())
        v1(torch.randn(3, 4).cuda()).sum().backward()
        v2 = torch.nn.Sequential(torch.nn.Linear(4, 2))
        fully_shard(v2)
        v2(torch.randn(3, 4).cuda()).sum().backward()
        return {"v1_compute_device": str(v1.compute_device),
                "v1_grad": all(p.grad is not None for p in v1.parameters()),
                "v2_grad": all(p.grad is not None for p in v2.parameters())}
    finally:
        torch.cuda.set_device(0)
        dist.destroy_process_group()


@probe
def process_group_and_parallel_wrappers():
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1, device_id=torch.device("cuda", 0))
    model = torch.nn.Linear(4, 2).to(0)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0], output_device=0)
    x = torch.randn(8, 4).cuda()
    ddp(x).sum().backward()
    parallel = torch.nn.DataParallel(model)
    same = torch.equal(parallel(x), model(x))
    features = torch.randn(8, 2).cuda()
    synced = torch.nn.SyncBatchNorm.convert_sync_batchnorm(torch.nn.Sequential(torch.nn.BatchNorm1d(2))).cuda()
    sync_batch_norm_same = torch.equal(synced(features), torch.nn.BatchNorm1d(2)(features))
    group = dist.new_group(backend="nccl")
    backend, group_backend = dist.get_backend(), dist.get_backend(group)
    dist.destroy_process_group()
    return {"backend": backend, "new_group_backend": group_backend, "ddp_grad": model.weight.grad is not None,
            "data_parallel_device_ids": parallel.device_ids, "data_parallel_same_output": same,
            "sync_batch_norm_same_output": sync_batch_norm_same}


@probe
def bf16_compression_hook():
    """DDP's bf16 gradient compression, which torch allows only with CUDA and NCCL 2.10+."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    model = torch.nn.Linear(4, 2).cuda()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
    ddp.register_comm_hook(None, default_hooks.bf16_compress_hook)
    x = torch.randn(8, 4).cuda()
    ddp(x).sum().backward()
    expected = x.sum(0).to(torch.bfloat16).float()  # each output's weight gradient, rounded to bfloat16 and back
    same = all(torch.equal(row, expected) for row in model.weight.grad)
    dist.destroy_process_group()
    return {"nccl_version": list(torch.cuda.nccl.version()), "gradient_as_compressed": same}


@probe
def device_index_handed_back():
    """Scripts put new tensors where an existing one is: `device=x.get_device()`. On the instance that is the
    GPU's index; a stand-in tensor is a CPU tensor, whose index is -1."""
    torch.cuda.set_device(2)
    x = torch.ones(2).cuda()
    made = torch.zeros(2, device=x.get_device())
    return {"get_device": x.get_device(), "made": devices_of(made, torch.ones(2).to(x.get_device()),
                                                                torch.ones(2).cuda(x.get_device())),
            "device_object": str(torch.device(x.get_device())), "synchronize": torch.cuda.synchronize(-1),
            "current_after": torch.cuda.current_device()}


@probe
def nvml_queries():
    """What scripts log beside the loss: NVML's figures, through torch.cuda (a CPU build lacks pynvml)."""
    x = torch.randn(256, 256)
    torch.cuda.utilization()
    for _ in range(50):
        x = (x @ x).tanh()
    busy = torch.cuda.utilization(0)
    processes = torch.cuda.list_gpu_processes(1).splitlines()
    return {"utilization_is_percent": isinstance(busy, int) and 0 <= busy <= 100,
            "sensors": [torch.cuda.temperature(), torch.cuda.power_draw(), torch.cuda.clock_rate(),
                        torch.cuda.memory_usage(), torch.cuda.device_memory_used()],
            "processes": [processes[0], processes[1].split()[:2] == ["process", str(os.getpid())]]}


@probe
def cuda_classes_in_annotations():
    """transformers evaluates `torch.cuda.CUDAGraph | None` when it is imported."""
    return [str(torch.cuda.CUDAGraph | None), str(torch.cuda.ExternalStream | None)]


@probe
def unsupported_cuda_graph():
    torch.cuda.CUDAGraph()


@probe
def unsupported_graph_context():
    with torch.cuda.graph(None):
        pass


@probe
def unsupported_nccl():
    torch.cuda.nccl.all_reduce([torch.ones(1)])


@probe
def unsupported_runtime_call():
    torch.cuda.ipc_collect()


@probe
def unsupported_cuda_extension():
    from torch.utils.cpp_extension import load_inline

    load_inline("kernels", cpp_sources="", cuda_sources="__global__ void k() {}")


@probe
def unsupported_triton():
    try:
        import triton  # noqa: F401
    except ImportError as error:
        return {"import_error": True, "message": str(error)}


@probe
def compile_asking_for_cuda_graphs():
    """torch.compile's CUDA-graph modes, asked twice, and a mode without them; the compile itself starts at the first
    call, which this probe never makes."""
    model = torch.nn.Linear(2, 2).cuda()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = [torch.compile(model, mode="reduce-overhead"), torch.compile(model, mode="reduce-overhead"),
                    torch.compile(model, mode="default"), torch.compile(model, options={"triton.cudagraphs": True})]
    return {"compiled": [type(module).__name__ for module in compiled],
            "said": [str(warning.message) for warning in caught if "smtrain" in str(warning.message)]}


@probe
def nvtx_ranges():
    torch.cuda.nvtx.range_push("forward")
    torch.cuda.nvtx.range_pop()
    with torch.cuda.nvtx.range("step"):
        torch.cuda.nvtx.mark("here")
    return True


def main():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    results = {}
    for name, function in PROBES.items():
        try:
            results[name] = function()
        except Exception as error:
            results[name] = {"error": type(error).__name__, "message": str(error)}
    print(json.dumps(results))


if __name__ == "__main__":
    main()
