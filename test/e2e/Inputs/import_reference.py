"""Trains a user's PyTorch module as tgc-import imports it, in PyTorch, as
the reference for the imported model's training: FACTORY() from FILE (the
same initialisation the import's --weights holds), torch.optim.AdamW with
tgc's defaults (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01 on
every parameter) on DATA's batches as tgc-run takes them (step i: batch i
mod N), the loss the cross-entropy of the logits against the batch's
targets (-100 ignored); writes each step's loss (METRICS, JSON lines) and
the final parameters (FINAL, by state-dict name).
Usage: import_reference.py FILE.py:FACTORY classify|causal-lm DATA STEPS
       METRICS FINAL"""
import importlib.util
import sys


sys.path.insert(0, __file__.rsplit("/", 1)[0])
import adamw_reference  # noqa: E402
import safetensors_io  # noqa: E402

spec, task, data, steps, metrics, final = sys.argv[1:7]
path, name = spec.rsplit(":", 1)
loader = importlib.util.spec_from_file_location("user_module", path)
module = importlib.util.module_from_spec(loader)
loader.loader.exec_module(module)
model = getattr(module, name)()
first = "inputs" if task == "classify" else "tokens"
adamw_reference.train(model, safetensors_io.load(data), steps, metrics, final,
                      lambda model, batches, i: model(batches[first][i]))
