"""Fine-tunes a sequence classifier with the transformers Trainer, as the Hugging Face SageMaker examples do
(hyperparameters as arguments, the model from a channel, evaluation every epoch, the model saved to
SM_MODEL_DIR), written for GPUs: no device or backend is named; the Trainer takes them from the launcher.

The Trainer's sharding and precision options come as hyperparameters, as the published example scripts take
them: ``--fsdp "full_shard auto_wrap" --fsdp_config FILE``, ``--deepspeed FILE``, ``--bf16 true``.

Rank 0 prints one JSON line with what the Trainer counted: {"world_size", "n_gpu", "parallel_mode", "device"}.
"""

import argparse
import json
import os

import torch
from sentiment_data import sentences
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--train_batch_size", type=int, default=4)
parser.add_argument("--learning_rate", type=float, default=1e-2)
parser.add_argument("--train_size", type=int, default=512)
parser.add_argument("--model_dir", type=str, default=os.environ["SM_MODEL_DIR"])
parser.add_argument("--model_channel", type=str, default=os.environ["SM_CHANNEL_MODEL"])
parser.add_argument("--fsdp", type=str, default="")
parser.add_argument("--fsdp_config", type=str, default=None)
parser.add_argument("--deepspeed", type=str, default=None)
parser.add_argument("--bf16", type=lambda value: value.lower() == "true", default=False)
args, _ = parser.parse_known_args()

tokenizer = AutoTokenizer.from_pretrained(args.model_channel)
model = AutoModelForSequenceClassification.from_pretrained(args.model_channel)


class Encoded(torch.utils.data.Dataset):
    def __init__(self, rows):
        self.encodings = tokenizer([text for text, _ in rows], padding="max_length", max_length=8, truncation=True)
        self.labels = [label for _, label in rows]

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        item = {key: torch.tensor(values[index]) for key, values in self.encodings.items()}
        item["labels"] = torch.tensor(self.labels[index])
        return item


training_args = TrainingArguments(
    output_dir="/tmp/trainer-output",
    num_train_epochs=args.epochs,
    per_device_train_batch_size=args.train_batch_size,
    per_device_eval_batch_size=8,
    learning_rate=args.learning_rate,
    eval_strategy="epoch",
    logging_strategy="epoch",
    save_strategy="no",
    report_to=[],
    disable_tqdm=True,
    fsdp=args.fsdp,
    fsdp_config=args.fsdp_config,
    deepspeed=args.deepspeed,
    bf16=args.bf16,
)
trainer = Trainer(model=model, args=training_args, train_dataset=Encoded(sentences(args.train_size, seed=0)),
                  eval_dataset=Encoded(sentences(16, seed=1)))
trainer.train()
trainer.save_model(args.model_dir)
if training_args.process_index == 0:
    tokenizer.save_pretrained(args.model_dir)
    print(json.dumps({"world_size": training_args.world_size, "n_gpu": training_args.n_gpu,
                      "parallel_mode": str(training_args.parallel_mode), "device": str(training_args.device)}),
          flush=True)
