"""transformers' tokens and loss masks for the checks of what
`tgc-data encode --tokenizer DIR` wrote (check_chat_data.py,
check_preference_data.py); TOK is AutoTokenizer of DIR."""


def prompt_answer(tok, prompt, answer):
    """tokenizer(PROMPT) then tokenizer(ANSWER, no special tokens) and EOS;
    trained: the answer and EOS."""
    first = tok(prompt)["input_ids"]
    second = tok(answer, add_special_tokens=False)["input_ids"]
    second = second + [tok.eos_token_id]
    return first + second, [0] * len(first) + [1] * len(second)


def conversation(tok, messages, turns=0):
    """apply_chat_template(MESSAGES, tokenize=True); trained: each assistant
    turn from index TURNS on, from the length of the template applied to the
    turns before it with add_generation_prompt to its length through the
    turn."""
    ids = tok.apply_chat_template(messages, tokenize=True)
    mask = [0] * len(ids)
    for turn in range(turns, len(messages)):
        if messages[turn]["role"] != "assistant":
            continue
        begin = len(tok.apply_chat_template(messages[:turn], tokenize=True,
                                            add_generation_prompt=True))
        end = len(tok.apply_chat_template(messages[:turn + 1],
                                          tokenize=True))
        mask[begin:end] = [1] * (end - begin)
    return ids, mask
