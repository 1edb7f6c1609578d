"""Writes a tiny random Hugging Face model directory (save_pretrained,
transformers 4.47.1) of a family tgc-models does not build, for
tgc-import's tests: opt (learned positions, ReLU, biases), gpt-neox
(partial rotary embeddings, fused interleaved q/k/v, parallel residual),
gemma (RMSNorm on 1 + weight, GeGLU, one key/value head, tied
embeddings), gemma2 (gemma-2-2b's flags: attention and final logits
soft-capped, sliding-window layers alternating with global ones, the
query scale from query_pre_attn_scalar, pre- and post-norms, the hybrid
cache its config asks for), glm (GLM-4's flags: partial rotary on
interleaved pairs, q/k/v biases, grouped-query keys, fused gate_up),
falcon (falcon-7b's flags: multi-query attention from one fused
projection, attention and MLP in parallel off one LayerNorm, no biases),
mixtral and qwen2-moe (mixtures of experts: Mixtral-8x7B's top-2 router,
Qwen1.5-MoE's unnormalized top-4 with a gated shared expert),
gpt-neo (alternating global and local attention), distilbert
(a sequence classifier), bert (the same head), deberta-v3
(deberta-v3-base's flags: relative attention with log position buckets,
c2p and p2c with shared keys; a sequence classifier) and deberta-v3-mlm
(the same with a masked-LM head), roberta
and roberta-mlm (roberta-base's flags: positions counted from the padding
id 1; a sequence classifier and a masked LM), t5 (t5-small's flags:
relative position bias buckets in each stack's first layer, RMS-style
LayerNorm, ReLU, embeddings tied and the output scaled by d_model^-0.5),
flan-t5 (Flan-T5's: gated GELU, untied output), phi3 (phi-3-mini's: fused
qkv_proj and gate_up_proj, a sliding window; two key/value heads), bart (bart-base's: learned
positions offset by 2, LayerNorm after embeddings, GELU, tied embeddings,
final_logits_bias) and bert-qa (a question-answering head: refused). No
dropout.
Usage: make_hf_model.py DIR KIND"""
import sys

import torch
import transformers

out, kind = sys.argv[1], sys.argv[2]
torch.manual_seed(11)
T = transformers
# deberta-v3-base's flags, sizes shrunk.
DEBERTA_V3 = dict(
    vocab_size=96, hidden_size=64, intermediate_size=128,
    num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=64,
    relative_attention=True, position_buckets=16, norm_rel_ebd="layer_norm",
    share_att_key=True, pos_att_type=["p2c", "c2p"],
    position_biased_input=False, max_relative_positions=-1)
# T5's sizes shrunk (the encoder's and the relative position buckets').
T5 = dict(vocab_size=96, d_model=64, d_kv=16, d_ff=128, num_layers=2,
          num_heads=4, relative_attention_num_buckets=8,
          relative_attention_max_distance=20, pad_token_id=0, eos_token_id=1,
          decoder_start_token_id=0)
if kind == "opt":
    model = T.OPTForCausalLM(T.OPTConfig(
        vocab_size=96, hidden_size=64, ffn_dim=128, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=64,
        word_embed_proj_dim=64, dropout=0.0, attention_dropout=0.0))
elif kind == "gpt-neox":
    model = T.GPTNeoXForCausalLM(T.GPTNeoXConfig(
        vocab_size=96, hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4,
        max_position_embeddings=64, hidden_dropout=0.0,
        attention_dropout=0.0))
elif kind == "gemma":
    model = T.GemmaForCausalLM(T.GemmaConfig(
        vocab_size=96, hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
        head_dim=16, max_position_embeddings=64,
        hidden_activation="gelu_pytorch_tanh"))
elif kind == "gemma2":
    # The window (8) shorter than the tests' sequences (32), so that the
    # sliding layers differ from the global ones.
    model = T.Gemma2ForCausalLM(T.Gemma2Config(
        vocab_size=96, hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, max_position_embeddings=64, sliding_window=8,
        query_pre_attn_scalar=24, attn_logit_softcapping=50.0,
        final_logit_softcapping=30.0, cache_implementation="hybrid",
        hidden_activation="gelu_pytorch_tanh"))
elif kind == "glm":
    model = T.GlmForCausalLM(T.GlmConfig(
        vocab_size=96, hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, max_position_embeddings=64, partial_rotary_factor=0.5,
        attention_bias=True, pad_token_id=0, eos_token_id=1,
        bos_token_id=2))
elif kind == "falcon":
    model = T.FalconForCausalLM(T.FalconConfig(
        vocab_size=96, hidden_size=64, num_hidden_layers=2,
        num_attention_heads=4, multi_query=True, parallel_attn=True,
        new_decoder_architecture=False, bias=False, alibi=False,
        hidden_dropout=0.0, attention_dropout=0.0))
elif kind == "gpt-neo":
    model = T.GPTNeoForCausalLM(T.GPTNeoConfig(
        vocab_size=96, hidden_size=64, num_layers=2,
        attention_types=[[["global", "local"], 1]], num_heads=4,
        max_position_embeddings=64, window_size=8, resid_dropout=0.0,
        embed_dropout=0.0, attention_dropout=0.0))
elif kind == "mixtral":
    # Mixtral-8x7B's flags (top-2 of 8 experts, SiLU-gated experts, grouped
    # keys), four experts.
    model = T.MixtralForCausalLM(T.MixtralConfig(
        vocab_size=96, hidden_size=64, intermediate_size=96,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=64, num_local_experts=4,
        num_experts_per_tok=2, router_jitter_noise=0.0))
elif kind == "qwen2-moe":
    # Qwen1.5-MoE-A2.7B's flags: top-4 of 60 experts unnormalized, a shared
    # expert behind a sigmoid gate, q/k/v biases; eight experts.
    model = T.Qwen2MoeForCausalLM(T.Qwen2MoeConfig(
        vocab_size=96, hidden_size=64, intermediate_size=128,
        moe_intermediate_size=48, shared_expert_intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
        max_position_embeddings=64, num_experts=8, num_experts_per_tok=4,
        norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[]))
elif kind == "distilbert":
    model = T.DistilBertForSequenceClassification(T.DistilBertConfig(
        vocab_size=96, dim=64, n_layers=2, n_heads=4, hidden_dim=128,
        max_position_embeddings=48, num_labels=3))
elif kind == "bert":
    model = T.BertForSequenceClassification(T.BertConfig(
        vocab_size=96, hidden_size=64, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=48, num_labels=3))
elif kind == "deberta-v3":
    model = T.DebertaV2ForSequenceClassification(T.DebertaV2Config(
        **DEBERTA_V3, num_labels=3))
elif kind == "deberta-v3-mlm":
    model = T.DebertaV2ForMaskedLM(T.DebertaV2Config(**DEBERTA_V3))
elif kind == "roberta":
    model = T.RobertaForSequenceClassification(T.RobertaConfig(
        vocab_size=96, hidden_size=64, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=48, pad_token_id=1, num_labels=3))
elif kind == "roberta-mlm":
    model = T.RobertaForMaskedLM(T.RobertaConfig(
        vocab_size=96, hidden_size=64, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=48, pad_token_id=1))
elif kind == "phi3":
    # phi-3-mini's flags (fused qkv and gate_up, a window shorter than the
    # sequence, RMSNorm eps 1e-5), grouped-query keys as Phi-3-medium's;
    # padding id 0, the batches' (its own 32000 lies outside this vocabulary).
    model = T.Phi3ForCausalLM(T.Phi3Config(
        vocab_size=96, hidden_size=64, intermediate_size=96,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=64, original_max_position_embeddings=64,
        sliding_window=8, rms_norm_eps=1e-5, pad_token_id=0))
elif kind == "t5":
    model = T.T5ForConditionalGeneration(T.T5Config(
        **T5, num_decoder_layers=2, feed_forward_proj="relu",
        tie_word_embeddings=True))
elif kind == "flan-t5":
    model = T.T5ForConditionalGeneration(T.T5Config(
        **T5, num_decoder_layers=1, feed_forward_proj="gated-gelu",
        tie_word_embeddings=False))
elif kind == "bart":
    model = T.BartForConditionalGeneration(T.BartConfig(
        vocab_size=96, d_model=64, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64,
        pad_token_id=1, bos_token_id=0, eos_token_id=2,
        decoder_start_token_id=2, forced_eos_token_id=2))
    with torch.no_grad():  # a bias that shows if it is dropped
        model.final_logits_bias.normal_(0.0, 0.1)
elif kind == "bert-qa":
    model = T.BertForQuestionAnswering(T.BertConfig(
        vocab_size=96, hidden_size=64, num_hidden_layers=1,
        num_attention_heads=4, intermediate_size=128))
else:
    sys.exit(f"unknown kind {kind}")
model.save_pretrained(out, safe_serialization=True)
