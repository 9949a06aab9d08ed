"""Trains the small tokenizers the tokenizer goldens test, one per shape that
LLM checkpoints use, and saves each as a model directory (tokenizer.json +
tokenizer_config.json). Each trainer returns the added-token strings that the
test strings should mix into the text."""
import json
import os

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers

import tokenizer_corpus as corpus

GPT2_TOKENS = ["<|endoftext|>"]
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
BYTE_TOKENS = [f"<0x{b:02X}>" for b in range(256)]


def train(tokenizer, seed, vocab_size, special_tokens, **options):
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special_tokens,
                                  show_progress=False, **options)
    tokenizer.train_from_iterator(corpus.training_corpus(seed, 4000, special_tokens), trainer)


def save(tokenizer, directory, config, string_merges=False):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "tokenizer.json")
    tokenizer.save(path)
    if string_merges:  # the older "left right" spelling of merges
        with open(path, encoding="utf-8") as stream:
            data = json.load(stream)
        data["model"]["merges"] = [" ".join(pair) for pair in data["model"]["merges"]]
        with open(path, "w", encoding="utf-8") as stream:
            json.dump(data, stream, ensure_ascii=False)
        Tokenizer.from_file(path)  # still loads
    config = {"tokenizer_class": "PreTrainedTokenizerFast",
              "clean_up_tokenization_spaces": False, **config}
    with open(os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8") as stream:
        json.dump(config, stream, ensure_ascii=False, indent=1)


def byte_level_tokenizer(pre_tokenizer, ignore_merges=False, normalizer=None):
    tokenizer = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def train_gpt2(directory):
    """GPT-2: ByteLevel pre-tokenizer with its own regex, ByteLevel decoder."""
    tokenizer = byte_level_tokenizer(pre_tokenizers.ByteLevel(add_prefix_space=False))
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    train(tokenizer, 1, 3000, GPT2_TOKENS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True)])
    tokenizer.add_tokens([AddedToken("[WORD]", single_word=True),
                          AddedToken("<pad>", rstrip=True, normalized=False),
                          AddedToken(" New York")])
    save(tokenizer, directory, {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"},
         string_merges=True)
    return GPT2_TOKENS + ["<mask>", "[WORD]", "<pad>", " New York"]


def train_llama3(directory):
    """Llama-3: Split(regex) + ByteLevel without regex, ignore_merges, BOS template."""
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>",
                "<|end_header_id|>"]
    tokenizer = byte_level_tokenizer(
        pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        ignore_merges=True)
    train(tokenizer, 2, 4000, specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bos = specials[0]
    tokenizer.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                      special_tokens=[(bos, tokenizer.token_to_id(bos))])])
    save(tokenizer, directory, {"bos_token": bos, "eos_token": "<|eot_id|>"})
    return specials


def train_qwen2(directory):
    """Qwen2: NFC, digit splitting, Split(regex) + ByteLevel, no post-processor."""
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokenizer = byte_level_tokenizer(
        pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        normalizer=normalizers.NFC())
    train(tokenizer, 3, 3000, specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    save(tokenizer, directory, {"bos_token": None, "eos_token": "<|im_end|>"})
    return specials


def with_byte_tokens(tokenizer, specials):
    """SentencePiece layout: specials first, then <0x00>..<0xFF>, then the
    trained pieces, all in the model vocab (byte_fallback finds them there)."""
    data = json.loads(tokenizer.to_str())
    trained = sorted(data["model"]["vocab"].items(), key=lambda item: item[1])
    ordered = specials + BYTE_TOKENS + [t for t, _ in trained if t not in specials]
    data["model"]["vocab"] = {token: i for i, token in enumerate(ordered)}
    for added in data["added_tokens"]:
        added["id"] = ordered.index(added["content"])
    return Tokenizer.from_str(json.dumps(data))


def spm_tokenizer(normalizer, pre_tokenizer, seed):
    specials = ["<unk>", "<s>", "</s>"]
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizer
    train(tokenizer, seed, 3000, specials, limit_alphabet=150)
    return with_byte_tokens(tokenizer, specials), specials


def train_llama2(directory):
    """Llama-2: Prepend + Replace normalizers, no pre-tokenizer, byte
    fallback, Replace/ByteFallback/Fuse/Strip decoders, BOS template."""
    tokenizer, specials = spm_tokenizer(
        normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]), None, 4)
    tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                           decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    tokenizer.add_tokens([AddedToken("<tool>", normalized=True)])
    save(tokenizer, directory, {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                                "add_bos_token": True, "add_eos_token": False},
         string_merges=True)
    return specials + ["<tool>"]


def train_metaspace(directory):
    """Metaspace pre-tokenizer (prepend "first", split) and decoder; the
    config asks for BOS and EOS although tokenizer.json has no post-processor."""
    tokenizer, specials = spm_tokenizer(
        None, pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True), 5)
    tokenizer.decoder = decoders.Sequence([
        decoders.ByteFallback(), decoders.Metaspace(replacement="▁", prepend_scheme="first")])
    tokenizer.add_special_tokens([AddedToken("<start_of_turn>", special=True),
                                  AddedToken("<end_of_turn>", special=True, rstrip=True)])
    save(tokenizer, directory, {"bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": False, "normalized": False, "rstrip": False, "single_word": False, "special": True}, "eos_token": "</s>",
                                "add_bos_token": True, "add_eos_token": True})
    return specials + ["<start_of_turn>", "<end_of_turn>"]


def train_mistral(directory):
    """Mistral / Llama-2 "legacy=false": Metaspace prepending only at the
    start of the input and not splitting, rstrip added tokens."""
    tokenizer, specials = spm_tokenizer(
        None, pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False), 6)
    tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                           decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    tokenizer.add_special_tokens([AddedToken("[INST]", special=True, rstrip=True),
                                  AddedToken("[/INST]", special=True, lstrip=True)])
    save(tokenizer, directory, {"bos_token": "<s>", "eos_token": "</s>"})
    return specials + ["[INST]", "[/INST]"]


def train_gemma(directory):
    """Gemma: Replace(" ", "▁") normalizer only (no prefix), byte fallback,
    decoders without Strip, BOS template and an EOS-free config."""
    tokenizer, specials = spm_tokenizer(normalizers.Replace(" ", "▁"), None, 7)
    tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                           decoders.Fuse()])
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    tokenizer.add_special_tokens([AddedToken("<start_of_turn>", special=True),
                                  AddedToken("<end_of_turn>", special=True)])
    tokenizer.add_tokens([AddedToken("\t\t", normalized=False), AddedToken("  ", normalized=True)])
    save(tokenizer, directory, {"bos_token": "<s>", "eos_token": "<end_of_turn>"})
    return specials + ["<start_of_turn>", "<end_of_turn>", "\t\t", "  "]


TRAINERS = {
    "gpt2_bytelevel": train_gpt2,
    "llama3_split": train_llama3,
    "qwen2_nfc_digits": train_qwen2,
    "llama2_spm": train_llama2,
    "metaspace_spm": train_metaspace,
    "mistral_metaspace": train_mistral,
    "gemma_replace": train_gemma,
}
