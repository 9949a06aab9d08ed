"""Deterministic multilingual text for training and testing the tokenizer
oracles: seeded random mixes of several scripts, emoji (including ZWJ
sequences), code, whitespace runs, long digit runs, odd punctuation and
special-token strings placed inside the text."""
import random

WORDS = {
    "en": "the quick brown fox jumps over lazy dog I'm you're we've they'll she'd it's "
          "Tokenizer model weights inference streaming server request latency HELLO World "
          "don't can't isn't O'Neil rock'n'roll naïve café coöperate".split(),
    "de": "Größe Straße Übermäßig schön Mädchen Fußgängerübergänge Donaudampfschifffahrt "
          "zwölf Bücher über Äpfel und Öl".split(),
    "fr": "garçon élève déjà où naïveté cœur œuvre français l'été aujourd'hui "
          "qu'il s'est Ça".split(),
    "zh": "我们 今天 天气 很好 中文 分词 测试 机器 学习 模型 你好 世界 汉字 繁體字".split(),
    "ja": "こんにちは 世界 日本語 のテキスト カタカナ ひらがな 東京 ラーメン を食べました".split(),
    "ru": "Привет мир русский язык токенизатор Ёлка съешь ещё этих мягких булок".split(),
    "ar": "مرحبا بالعالم اللغة العربية النموذج كتاب مدرسة".split(),
    "misc": "ε=mc² Ω≈ç√∫˜µ≤≥÷ ½ ¾ ⅔ ① ② Ⅻ ℃ ™ © ® ﬁ ﬂ ｆｕｌｌｗｉｄｔｈ ㈱ 한국어 안녕하세요 "
            "ไทย ภาษา हिन्दी नमस्ते ελληνικά".split(),
}

EMOJI = ["😀", "🚀", "👍🏽", "❤️", "🇩🇪", "🇯🇵", "👨‍👩‍👧‍👦", "🏳️‍🌈", "👩🏾‍💻", "🧑‍🤝‍🧑",
         "🤖", "✨", "🔥", "⚡", "🙂‍↕️"]

CODE = [
    "def f(x):\n    return x**2 + 1\n",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "if x != None and y >= 0:\n\tprint(f'{x=}, {y!r}')",
    "<div class=\"row\">&nbsp;</div>",
    "SELECT * FROM users WHERE id = 42;",
    "const re = /^\\s+|\\s+$/g; // trim",
    "#include <vector>\nint main() { return 0; }",
    "x = {'a': [1, 2, 3], \"b\": None}",
    "$ ls -la ~/.cache | grep -i 'mlx'",
    "```python\nimport numpy as np\n```",
]

PUNCT = ["...", "!?", "?!", "—", "–", "«", "»", "„", "“", "”", "‘", "’", "(", ")", "[", "]",
         "{", "}", ";", ":", ",", ".", "!!", "¿", "¡", "…", "•", "@", "#", "%", "&", "*", "~",
         "'", "'s", "'S", "'ll", "'LL", "\"", "`", "|", "\\", "/", "_", "__init__", "<", ">"]

WHITESPACE = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\t\t", "        ", "\u00a0",
              "\u3000", "\u2009", " \t\n", "\n   \n", "\r", "\x0b", "\x0c", "\x85", "\u2028",
              "\u2029", "\u180e", "\u200b", "\u202f", "\u205f", "\x1c", "\x1f", "\ufeff"]


def digits(rng):
    length = rng.choice([1, 2, 3, 4, 5, 7, 12, 25])
    text = "".join(rng.choice("0123456789") for _ in range(length))
    return rng.choice([text, text, f"{text}.{rng.randint(0, 99)}", f"-{text}", f"{text}%",
                       "٣٤٥", "१२३", "１２３"])


def fragment(rng, specials):
    kind = rng.random()
    if kind < 0.55:
        words = WORDS[rng.choice(list(WORDS))]
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
    if kind < 0.63:
        return rng.choice(EMOJI) * rng.randint(1, 2)
    if kind < 0.70:
        return rng.choice(CODE)
    if kind < 0.80:
        return digits(rng)
    if kind < 0.90:
        return rng.choice(PUNCT)
    if kind < 0.95 and specials:
        return rng.choice(specials)
    return rng.choice(WHITESPACE)


def joiner(rng):
    return rng.choices(["", " ", "  ", "\n", "\t", ", ", ". "], [2, 10, 1, 1, 1, 1, 1])[0]


def make_text(rng, specials, max_fragments):
    parts = []
    for _ in range(rng.randint(1, max_fragments)):
        parts.append(fragment(rng, specials))
        parts.append(joiner(rng))
    text = "".join(parts)
    roll = rng.random()
    if roll < 0.05:
        text = " " + text
    elif roll < 0.08:
        text = text + " "
    elif roll < 0.10:
        text = text.upper()
    return text


def training_corpus(seed, count, specials):
    rng = random.Random(seed)
    return [make_text(rng, specials, 12) for _ in range(count)]


def edge_cases(specials):
    cases = ["", " ", "  ", "\n", "\t", " \n", "a", "A", "▁", "▁▁hello", " ▁ ", "\u200d",
             "0", "0123456789" * 5, "'s", "'S's", "  hello", "hello  ", "hello\n\nworld",
             "\u00e9", "e\u0301", "A\u030a", "\u1100\u1161\u11a8", "\uac00", "ﬁ", "Å",
             "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "👨‍👩‍👧‍👦👨‍👩‍👧‍👦", "\U0010ffff", "\x00", "\x7f", "\ufeff", "\ufffd"]
    for special in specials:
        cases += [special, special + special, f" {special} ", f"a{special}b",
                  f"{special}hello", f"hello {special}", f"{special} {special}",
                  f"  {special}  x", f"x{special}\n", f"e\u0301{special}", f"①{special}½",
                  f"_{special}_", f"{special}\u200d", f"\u00a0{special}\u3000", f"{special}\t\n"]
    return cases


def test_strings(seed, count, specials):
    rng = random.Random(seed)
    strings = edge_cases(specials)
    while len(strings) < count:
        strings.append(make_text(rng, specials, 8))
    return strings
