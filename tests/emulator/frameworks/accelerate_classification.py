"""A custom training loop with Accelerate, as its SageMaker examples write one: `Accelerator(mixed_precision=...)`,
`prepare`, `backward`, `gather_for_metrics` for evaluation, `save_state` and `save_model`; no device or backend is
named, Accelerate takes them from the launcher (torchrun's variables, or SageMaker's smddp through
`SM_FRAMEWORK_PARAMS`).

Rank 0 prints one JSON line per epoch, {"epoch", "loss", "eval_accuracy"}, and at the end what Accelerate counted:
{"num_processes", "distributed_type", "backend", "mixed_precision", "device"}.
"""

import argparse
import json
import os

import torch
from accelerate import Accelerator
from sentiment_data import sentences
from transformers import AutoModelForSequenceClassification, AutoTokenizer

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--mixed_precision", type=str, default="fp16")
parser.add_argument("--learning_rate", type=float, default=5e-3)
parser.add_argument("--train_size", type=int, default=512)
args, _ = parser.parse_known_args()

accelerator = Accelerator(mixed_precision=args.mixed_precision)
tokenizer = AutoTokenizer.from_pretrained(os.environ["SM_CHANNEL_MODEL"])
model = AutoModelForSequenceClassification.from_pretrained(os.environ["SM_CHANNEL_MODEL"])


def loader(rows, shuffle):
    encoded = tokenizer([text for text, _ in rows], padding="max_length", max_length=8, return_tensors="pt")
    dataset = torch.utils.data.TensorDataset(encoded["input_ids"], encoded["attention_mask"],
                                             torch.tensor([label for _, label in rows]))
    return torch.utils.data.DataLoader(dataset, batch_size=4, shuffle=shuffle)


optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
model, optimizer, train_loader, eval_loader = accelerator.prepare(
    model, optimizer, loader(sentences(args.train_size, seed=0), True), loader(sentences(16, seed=1), False))

for epoch in range(args.epochs):
    model.train()
    total = torch.zeros((), device=accelerator.device)
    for input_ids, attention_mask, labels in train_loader:
        loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        total += loss.detach()
    mean_loss = accelerator.reduce(total / len(train_loader), reduction="mean")
    model.eval()
    correct = []
    for input_ids, attention_mask, labels in eval_loader:
        with torch.no_grad():
            predictions = model(input_ids=input_ids, attention_mask=attention_mask).logits.argmax(-1)
        correct.append(accelerator.gather_for_metrics(predictions == labels))
    if accelerator.is_main_process:
        print(json.dumps({"epoch": epoch, "loss": round(mean_loss.item(), 6),
                          "eval_accuracy": torch.cat(correct).float().mean().item()}), flush=True)

accelerator.save_state("/tmp/accelerate-state")
accelerator.wait_for_everyone()
accelerator.save_model(model, os.environ["SM_MODEL_DIR"])
if accelerator.is_main_process:
    state = accelerator.state
    print(json.dumps({"num_processes": accelerator.num_processes, "distributed_type": str(state.distributed_type),
                      "backend": state.backend, "mixed_precision": accelerator.mixed_precision,
                      "device": str(accelerator.device)}), flush=True)
