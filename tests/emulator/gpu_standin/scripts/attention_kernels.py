"""Scaled dot-product attention with each kernel choice a GPU script makes: ``sdpa_kernel`` with one backend or
several, and the older ``torch.backends.cuda.enable_*_sdp`` switches; forward and backward, with a mask.

    python attention_kernels.py

Prints one JSON line: per choice, whether the output and gradient equal the math kernel's, and what the
switches read inside the choice and after it.
"""

import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def switches():
    cuda = torch.backends.cuda
    return [cuda.flash_sdp_enabled(), cuda.mem_efficient_sdp_enabled(), cuda.math_sdp_enabled(),
            cuda.cudnn_sdp_enabled()]


def attend(query, mask):
    query = query.detach().requires_grad_()
    output = F.scaled_dot_product_attention(query, query, query, attn_mask=mask)
    output.sum().backward()
    return output.detach(), query.grad, switches()


def main():
    torch.manual_seed(0)
    query = torch.randn(2, 4, 16, 32, device="cuda")
    mask = torch.rand(16, 16, device="cuda") > 0.2
    with sdpa_kernel(SDPBackend.MATH):
        expected_output, expected_grad, _ = attend(query, mask)
    choices = {"efficient": SDPBackend.EFFICIENT_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
               "efficient_or_cudnn": [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]}
    results = {}
    for name, backends in choices.items():
        with sdpa_kernel(backends):
            output, grad, inside = attend(query, mask)
        results[name] = {"equal": torch.allclose(output, expected_output, atol=1e-5)
                         and torch.allclose(grad, expected_grad, atol=1e-5), "inside": inside}
    torch.backends.cuda.enable_flash_sdp(False)
    torch.backends.cuda.enable_math_sdp(False)
    output, grad, inside = attend(query, mask)
    results["switched_off_flash_and_math"] = {"equal": torch.allclose(output, expected_output, atol=1e-5),
                                              "inside": inside}
    print(json.dumps({"choices": results, "after": switches()}))


if __name__ == "__main__":
    main()
