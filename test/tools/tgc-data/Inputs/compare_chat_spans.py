"""Checks tgc-data's linear search for the assistant's spans
(ChatTemplate.spans_by_windows) against their definition
(spans_by_prefixes: each turn's conversation before and through it
rendered whole) on random conversations of 17 to 60 turns under the
chat templates of real model families (ChatML, Llama 3, Mistral's and
Gemma's, which check that roles alternate and fold the system prompt into
the first turn, Qwen2's default system prompt, Zephyr's) and templates the
windows cannot read (turns numbered, a footer after the last turn). The
windows must give the definition's spans whenever they give any, must
give them for every conversation the definition accepts under the
families' templates, and must decline the others.
Usage: compare_chat_spans.py (prints one line)"""
import importlib.util
import os
import random
import sys

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                       "..", "..", "..", "tools", "python")
sys.path.insert(0, SCRIPTS)
spec = importlib.util.spec_from_file_location(
    "tgc_data", os.path.join(SCRIPTS, "tgc-data.py"))
tgc_data = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tgc_data)

CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + "
    "'\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% endif %}")
LLAMA3 = (
    "{% for message in messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim "
    "+ '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + "
    "content %}{% endif %}{{ content }}{% endfor %}{% if "
    "add_generation_prompt %}{{ '<|start_header_id|>assistant"
    "<|end_header_id|>\\n\\n' }}{% endif %}")
MISTRAL = """{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{{- bos_token }}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('roles must alternate') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {%- if loop.first and system_message is defined %}
            {{- ' [INST] ' + system_message + '\\n\\n' + message['content'] + ' [/INST]' }}
        {%- else %}
            {{- ' [INST] ' + message['content'] + ' [/INST]' }}
        {%- endif %}
    {%- else %}
        {{- ' ' + message['content'] + eos_token }}
    {%- endif %}
{%- endfor %}"""
GEMMA = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("roles must alternate") }}
    {%- endif -%}
    {%- set role = "model" if message['role'] == 'assistant' else message['role'] -%}
    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else "") + message['content'] | trim + '<end_of_turn>\\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}{{ '<start_of_turn>model\\n' }}{%- endif -%}"""
QWEN2 = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] "
    "!= 'system' %}{{ '<|im_start|>system\\nYou are a helpful assistant."
    "<|im_end|>\\n' }}{% endif %}{{ '<|im_start|>' + message['role'] + '\\n' "
    "+ message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if "
    "add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
ZEPHYR = """{% for message in messages %}
{% if message['role'] == 'user' %}
{{ '<|user|>\\n' + message['content'] + eos_token }}
{% elif message['role'] == 'system' %}
{{ '<|system|>\\n' + message['content'] + eos_token }}
{% elif message['role'] == 'assistant' %}
{{ '<|assistant|>\\n'  + message['content'] + eos_token }}
{% endif %}
{% if loop.last and add_generation_prompt %}
{{ '<|assistant|>' }}
{% endif %}
{% endfor %}"""
NUMBERED = (
    "{% for message in messages %}{{ loop.index }}. {{ message['role'] }}: "
    "{{ message['content'] }}\n{% endfor %}{% if add_generation_prompt %}"
    "{{ (messages|length + 1) ~ '. assistant: ' }}{% endif %}")
FOOTER = (
    "{% for message in messages %}{{ message['role'] }}: "
    "{{ message['content'] }}\n{% endfor %}{% if add_generation_prompt %}"
    "assistant: {% endif %}<end>")

FAMILIES = {"chatml": CHATML, "llama3": LLAMA3, "mistral": MISTRAL,
            "gemma": GEMMA, "qwen2": QWEN2, "zephyr": ZEPHYR}
UNREADABLE = {"numbered": NUMBERED, "footer": FOOTER}
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}
WORDS = ["Thank you!", "  A spider has eight legs. ", "Guten Morgen.", "",
         "What is\nthe capital of France?"]

rng = random.Random(1)
limits = tgc_data.RenderLimits(60, 1024)


def conversation():
    turns = rng.randint(17, 60)
    messages = [{"role": "system", "content": "Be brief."}] \
        if rng.random() < 0.5 else []
    alternate = rng.random() < 0.8
    while len(messages) < turns:
        if alternate:
            role = "user" if (len(messages) - (messages[:1] != [] and
                              messages[0]["role"] == "system")) % 2 == 0 \
                else "assistant"
        else:
            role = rng.choice(["user", "assistant", "assistant"])
        messages.append({"role": role, "content": rng.choice(WORDS)})
    return messages


compared = windowed = 0
for name, source in list(FAMILIES.items()) + list(UNREADABLE.items()):
    template = tgc_data.ChatTemplate("test", source, name, TOKENS, limits)
    for _ in range(40):
        messages = conversation()
        try:
            full = template.render(messages, False)
        except Exception:
            continue  # refused whole (roles that do not alternate)
        try:
            exact = template.spans_by_prefixes("test", messages, full)
        except tgc_data.DataError:
            exact = None
        spans = template.spans_by_windows(messages, full)
        compared += 1
        if spans is not None and spans != exact:
            sys.exit(f"{name}: windows give {spans}, prefixes {exact}")
        if name in FAMILIES and exact is not None and spans is None:
            sys.exit(f"{name}: the windows decline a conversation of "
                     f"{len(messages)} turns")
        if name in UNREADABLE and spans is not None:
            sys.exit(f"{name}: the windows read a template they cannot")
        windowed += spans is not None
print(f"chat spans: {compared} conversations, {windowed} by windows, all "
      f"equal to the prefixes'")
