"""The training setup peft_train.py and preference_reference.py share:
transformers' model of a Hugging Face directory with PEFT's adapters and
torch.optim.AdamW at tgc's defaults. Runs in .venv-hf47."""
import torch
import transformers
from peft import PeftModel


def trainable(base, adapters, dtype=torch.float32):
    """The model of BASE in DTYPE (eager attention) with the adapters of
    ADAPTERS (a directory `tgc-run --save-adapters` wrote) loaded trainable
    by PeftModel.from_pretrained, or with ADAPTERS None every parameter
    trainable, in train mode, and AdamW over what trains (lr 1e-3, betas
    0.9/0.999, eps 1e-8, weight decay 0.01). Seeds torch with 0 first."""
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        base, torch_dtype=dtype, attn_implementation="eager")
    if adapters is not None:
        model = PeftModel.from_pretrained(model, adapters, is_trainable=True)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.01)
    return model, opt
