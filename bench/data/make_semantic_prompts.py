"""Writes semantic_prompts.jsonl: the labelled prompt set for bench/semantic_route.py.

    .venv/bin/python bench/data/make_semantic_prompts.py

Seven routes plus "none", each built from its own sentence frames and slot values, so the set is
deterministic (seed 7) and reviewable here rather than an opaque file. Each route's frames are
split: the `train` prompts (the examples a config would hold) come from the first frames only;
`test` holds unseen prompts from every frame, among them frames never seen in training
(paraphrases),
misspelled copies (typos at random positions), and multi-turn chats whose earlier user turn is
small talk or another topic. "none" is chit-chat, trivia and errands that no route should take.
"""
from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent / "semantic_prompts.jsonl"
TRAIN_FRAMES = 5  # the first frames of a route feed its training examples
TRAIN_PER_ROUTE = 20
TEST_PER_ROUTE = 50
NONE_TRAIN, NONE_TEST = 40, 80

ROUTES: dict[str, dict] = {
    "code": {
        "frames": ["write a {lang} function that {task}", "fix the bug in my {lang} code that {task}",
                   "how do I {task2} in {lang}?", "my {lang} program crashes with {error}, what is wrong?",
                   "can you refactor this {lang} snippet so it {task}", "explain what this {lang} code does: {snippet}",
                   "give me a unit test in {lang} for a function that {task}",
                   "why does my {lang} build fail with {error}"],
        "lang": ["Python", "JavaScript", "Rust", "Go", "Java", "C++", "TypeScript", "Kotlin"],
        "task": ["parses a CSV file", "reverses a linked list", "retries an HTTP request",
                 "removes duplicates from a list", "reads a JSON config", "validates an email address",
                 "merges two sorted arrays", "caches results in memory"],
        "task2": ["sort a dictionary by value", "read a file line by line", "spawn a thread",
                  "handle exceptions", "parse command line arguments", "format a date string"],
        "error": ["a null pointer exception", "index out of range", "a segmentation fault",
                  "an undefined variable error", "a borrow checker error", "a type mismatch"],
        "snippet": ["for i in range(10): print(i*i)", "const x = arr.map(a => a * 2)",
                    "fn main() { let v = vec![1, 2]; }", "SELECT * FROM users", "x = [y for y in z if y]"],
    },
    "math": {
        "frames": ["solve the equation {eq}", "what is the derivative of {fn}?",
                   "compute the integral of {fn}", "prove that {claim}",
                   "how many ways can you {combo}?", "find x if {eq}",
                   "what is the probability of {prob}?", "simplify the expression {expr}"],
        "eq": ["2x + 3 = 11", "x^2 - 5x + 6 = 0", "3x - 7 = 2x + 4", "x/4 + 2 = 5", "2^x = 32",
               "5x - 2 = 3x + 8", "x^2 = 49", "4(x - 1) = 20", "x^2 + 2x - 15 = 0", "10 - x = 3x + 2"],
        "fn": ["x^3 sin(x)", "e^(2x)", "ln(x^2 + 1)", "1/(1+x^2)", "x cos(x)", "sqrt(x)",
               "tan(x)", "x^2 e^x", "arctan(x)", "(3x + 1)^4"],
        "claim": ["the square root of 2 is irrational", "there are infinitely many primes",
                  "the sum of two even numbers is even", "n^2 + n is always even",
                  "the angles of a triangle add up to 180 degrees", "1 + 2 + ... + n = n(n+1)/2",
                  "every prime greater than 2 is odd", "the product of two odd numbers is odd",
                  "a number divisible by 6 is divisible by 3", "there is no largest even number",
                  "the diagonals of a rectangle are equal"],
        "combo": ["arrange 5 books on a shelf", "choose 3 people from a group of 10",
                  "seat 6 guests at a round table", "pick 2 cards from a deck",
                  "rearrange the letters of the word LEVEL", "split 8 players into two teams",
                  "climb 10 stairs taking one or two steps at a time", "colour a map with 3 colours",
                  "form a 4 digit number from the digits 1 to 6", "hand out 7 sweets to 3 children",
                  "line up 4 boys and 4 girls alternately"],
        "prob": ["rolling two sixes with two dice", "getting at least one head in three coin flips",
                 "drawing an ace from a deck", "two people sharing a birthday in a room of 23",
                 "drawing two red balls from a bag of 5 red and 3 blue", "a sum of 7 with two dice",
                 "no repeated digit in a random 4 digit PIN", "three heads in a row",
                 "winning a lottery with 6 of 49 numbers", "a random day falling on a weekend",
                 "drawing a heart or a king"],
        "expr": ["(x^2 - 9)/(x - 3)", "2(a + b) - 3(a - b)", "(x + 1)^2 - (x - 1)^2", "log(8)/log(2)",
                 "sqrt(50) + sqrt(18)", "(a^3 b^2)/(a b^4)", "sin^2(x) + cos^2(x)",
                 "(2x + 4)/2", "x(x + 3) - x^2", "e^(ln 5)", "(1/2 + 1/3) * 6"],
    },
    "translate": {
        "frames": ["translate '{phrase}' into {language}", "how do you say '{phrase}' in {language}?",
                   "please translate this {source} text to {language}: {text}",
                   "what does '{foreign}' mean in English?", "can you put this sentence into {language}: {phrase}",
                   "I need the {language} version of: {text}", "render this paragraph in {language}: {text}",
                   "is '{foreign}' the right way to say it in {language}?"],
        "phrase": ["good morning, how are you", "where is the train station", "thank you very much",
                   "I would like a coffee please", "the meeting is postponed until Monday",
                   "please close the door"],
        "language": ["French", "Spanish", "German", "Japanese", "Italian", "Portuguese", "Chinese"],
        "source": ["English", "French", "German", "Spanish"],
        "text": ["Our store opens at nine and closes at six.", "The package will arrive tomorrow.",
                 "Please find the invoice attached.", "We are looking forward to your visit."],
        "foreign": ["je ne sais pas", "wie geht es dir", "donde esta el baño", "arigatou gozaimasu",
                    "buona notte", "obrigado"],
    },
    "summarize": {
        "frames": ["summarize this article in three sentences: {doc}", "give me a tl;dr of the following {kind}: {doc}",
                   "condense these {kind} into bullet points: {doc}", "what are the key points of this {kind}? {doc}",
                   "write a short summary of the {kind} below. {doc}", "boil this {kind} down to one paragraph: {doc}",
                   "make an executive summary of this {kind}: {doc}", "shorten this {kind} for a busy reader: {doc}"],
        "kind": ["meeting notes", "report", "email thread", "news story", "research paper", "blog post"],
        "doc": ["The quarterly revenue rose 12 percent while costs stayed flat, and the board approved a new office.",
                "Researchers found that sleeping eight hours improves memory consolidation in adults.",
                "The city council voted to extend the bike lane network and raise parking fees downtown.",
                "Team agreed to ship version 2 next week, fix the login bug first, and hire two testers.",
                "The storm knocked out power to thousands of homes; crews expect repairs by Friday."],
    },
    "creative": {
        "frames": ["write a poem about {topic}", "compose a short story about {character} who {plot}",
                   "write song lyrics about {topic}", "give me a haiku about {topic}",
                   "write a limerick about {character}", "draft the opening scene of a novel where {character} {plot}",
                   "create a bedtime story featuring {character}", "write a sonnet on {topic}"],
        "topic": ["the ocean at night", "autumn leaves", "lost love", "a city in the rain",
                  "the first snow", "friendship", "the stars"],
        "character": ["a lonely robot", "a brave little mouse", "an old lighthouse keeper",
                      "a dragon afraid of fire", "a time-travelling cat"],
        "plot": ["discovers a hidden door", "learns to fly", "searches for a lost friend",
                 "wins a baking contest", "wakes up in the future"],
    },
    "sql": {
        "frames": ["write a SQL query that {query}", "how do I {op} in PostgreSQL?",
                   "my {db} query is slow when it {query}, how can I speed it up?",
                   "design a database schema for {app}", "what index should I add to a table that {query}?",
                   "convert this query to use a join: {sqltext}", "explain the query plan of a query that {query}",
                   "write a migration that {op2}"],
        "query": ["lists customers with more than five orders", "finds the top ten products by revenue",
                  "counts users who signed up each month", "selects duplicate email addresses",
                  "joins orders with invoices by customer id", "deletes rows older than a year",
                  "finds employees earning more than their manager", "groups sales by region and quarter",
                  "returns the second highest salary", "lists products that were never ordered"],
        "op": ["create a foreign key", "add a column with a default value", "use a window function",
               "write a recursive CTE", "lock a row for update", "back up a database"],
        "db": ["MySQL", "PostgreSQL", "SQLite", "SQL Server"],
        "app": ["a library lending system", "an online shop", "a hotel booking site", "a school timetable"],
        "sqltext": ["SELECT * FROM a WHERE id IN (SELECT a_id FROM b)",
                    "SELECT name FROM users WHERE id IN (SELECT user_id FROM orders)",
                    "SELECT title FROM books WHERE author_id IN (SELECT id FROM authors WHERE country = 'FR')",
                    "SELECT * FROM orders WHERE customer_id IN (SELECT id FROM customers WHERE vip)",
                    "SELECT sku FROM items WHERE id NOT IN (SELECT item_id FROM sales)"],
        "op2": ["renames a column", "adds a not-null constraint", "splits a table in two", "adds a unique index",
                "changes a column type to bigint", "drops an unused table", "adds a created_at timestamp"],
    },
    "support": {
        "frames": ["I was charged twice for my {plan} subscription", "how do I cancel my {plan} plan?",
                   "I can't log in to my account, {issue}", "please refund my last payment, {reason}",
                   "my invoice shows the wrong {field}", "how do I change the {field} on my account?",
                   "the app says my card was declined but {issue}", "I want to upgrade from {plan} to the team plan"],
        "plan": ["monthly", "annual", "premium", "basic", "family", "student", "pro", "business", "starter"],
        "issue": ["the reset email never arrives", "it says my password is wrong", "my account got locked",
                  "the verification code expired", "the bank shows the money was taken",
                  "two-factor codes stopped working", "it keeps logging me out", "the page just spins",
                  "support never answered my ticket"],
        "reason": ["I cancelled last week", "I never used the service", "the charge was a mistake",
                   "the product did not work", "I was billed after the trial ended",
                   "I was charged in the wrong currency", "my order never shipped", "it was a duplicate payment"],
        "field": ["billing address", "company name", "email address", "tax number", "payment method",
                  "VAT ID", "phone number", "invoice recipient", "country of residence"],
    },
}

NONE = [
    "what's the weather like in Paris tomorrow?", "tell me a fun fact about octopuses",
    "who won the football world cup in 2018?", "what time is it in Tokyo right now?",
    "recommend a good movie for tonight", "how tall is Mount Everest?", "hi, how are you today?",
    "what should I cook for dinner with chicken and rice?", "plan a weekend trip to Lisbon",
    "what are some good exercises for back pain?", "who painted the Mona Lisa?",
    "give me tips to sleep better", "what is the capital of Australia?", "how do I get rid of weeds in my garden?",
    "suggest a name for my new puppy", "what's a good gift for my dad's birthday?", "how far is the moon?",
    "tell me a joke", "what year did the Berlin wall fall?", "how do I remove a coffee stain from a shirt?",
    "which houseplants need little light?", "how long should I boil an egg?", "good morning!",
    "what is the best way to learn to swim as an adult?", "why is the sky blue?",
    "thanks, that's all for now", "who wrote Pride and Prejudice?", "how many players are on a rugby team?",
    "what are the symptoms of a cold?", "recommend a podcast about history", "how do I tie a tie?",
    "what's the difference between a frog and a toad?", "should I bring an umbrella today?",
    "how many calories are in a banana?", "what is the tallest building in the world?",
    "can you recommend a board game for four people?", "how do I train for a 5k run?",
    "what's the population of Canada?", "where do penguins live?", "how do I make my houseplants grow faster?",
    "what is a good stretching routine in the morning?", "tell me about the history of the Roman empire",
    "which is healthier, tea or coffee?", "how do I clean a cast iron pan?", "what is the speed of sound?",
    "help me choose between a cat and a dog", "what's a nice place for a picnic near a lake?",
    "how do vaccines work?", "what are the rules of chess castling?", "who is the fastest runner ever?",
    "how do I start journaling?", "what is the longest river in Africa?", "ideas for a rainy Sunday",
    "how often should I water a cactus?", "what is the origin of Halloween?", "how do bees make honey?",
    "what time does the sun set in winter?", "recommend a hiking trail in the Alps",
    "what is the meaning of life?", "how do I fold a fitted sheet?", "is it safe to eat raw cookie dough?",
    "what languages are spoken in Switzerland?", "tips for a job interview tomorrow",
    "how do I say no politely to a friend?", "what's the best time to visit Japan?",
    "how does a rainbow form?", "what should I pack for a beach holiday?", "who discovered penicillin?",
    "how do I keep my cat off the table?", "what is the boiling point of water at altitude?",
    "suggest a workout I can do at home", "what are good snacks for a road trip?",
    "why do cats purr?", "how many bones are in the human body?", "what is the biggest animal on earth?",
    "how do I get better at public speaking?", "what should I read next if I liked Dune?",
    "how do I make friends in a new city?", "is it going to snow this weekend in Denver?",
    "which planet has the most moons?", "what are the opening hours of the Louvre?",
    "how do I calm down before an exam?", "what's a good hobby to pick up?", "how are pearls formed?",
    "who was the first person on the moon?", "what's the etiquette for tipping in the US?",
    "recommend a jazz album", "what is the national dish of Spain?", "how do I care for a bonsai tree?",
    "what causes thunder?", "how do I stop procrastinating?", "what is the oldest city in Europe?",
    "how do I choose a good watermelon?", "what's the best way to store fresh herbs?",
    "how do birds migrate?", "what's a fun thing to do on a first date?", "good night!",
    "how do I keep mosquitoes away?", "what is the history of the Olympic games?",
    "how many hours of sleep does a teenager need?", "what are the wonders of the ancient world?",
    "how do I become a morning person?", "what is the difference between weather and climate?",
    "how can I improve my handwriting?", "what's the story behind the Eiffel tower?",
    "how do I start running again after an injury?", "name some famous impressionist painters",
    "how do I host a dinner party for eight?", "what's a good name for a bakery?",
]

SMALL_TALK = ["hi there", "hello!", "good morning", "hey, quick question", "thanks for the help earlier"]
REPLIES = ["Hello! How can I help?", "Sure, go ahead.", "Happy to help."]


def fill(frame: str, slots: dict, rng: random.Random) -> str:
    out = frame
    for key, values in slots.items():
        out = out.replace("{" + key + "}", rng.choice(values), 1) if "{" + key + "}" in out else out
    return out[0].upper() + out[1:]


def misspell(text: str, rng: random.Random) -> str:
    chars = list(text)
    letters = [i for i, c in enumerate(chars) if c.isalpha()]
    for i in rng.sample(letters, k=max(1, len(letters) // 15)):
        op = rng.choice(("swap", "drop", "double"))
        if op == "swap" and i + 1 < len(chars):
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
        elif op == "drop":
            chars[i] = ""
        else:
            chars[i] = chars[i] * 2
    return "".join(chars)


def chat(*user: str) -> list[dict]:
    messages = []
    for i, text in enumerate(user):
        if i:
            messages.append({"role": "assistant", "content": REPLIES[i % len(REPLIES)]})
        messages.append({"role": "user", "content": text})
    return messages


def route_prompts(name: str, spec: dict, rng: random.Random) -> list[dict]:
    frames, slots = spec["frames"], {k: v for k, v in spec.items() if k != "frames"}
    seen: set[str] = set()

    def fresh(frame_pool: list[str]) -> str:
        for _ in range(5000):
            text = fill(rng.choice(frame_pool), slots, rng)
            if text not in seen:
                seen.add(text)
                return text
        raise RuntimeError(f"{name}: frames exhausted")

    rows = [{"route": name, "split": "train", "kind": "base", "messages": chat(fresh(frames[:TRAIN_FRAMES]))}
            for _ in range(TRAIN_PER_ROUTE)]
    kinds = itertools.cycle(["base", "paraphrase", "paraphrase", "misspelled", "multi_turn"])
    # paraphrases first: they have the fewest frames to draw unseen prompts from
    for kind in sorted((next(kinds) for _ in range(TEST_PER_ROUTE)), key=lambda k: k != "paraphrase"):
        pool = frames[TRAIN_FRAMES:] if kind == "paraphrase" else frames
        text = fresh(pool)
        if kind == "misspelled":
            messages = chat(misspell(text, rng))
        elif kind == "multi_turn":
            earlier = rng.choice(SMALL_TALK + NONE[:20])
            messages = chat(earlier, text)
        else:
            messages = chat(text)
        rows.append({"route": name, "split": "test", "kind": kind, "messages": messages})
    return rows


def none_prompts(rng: random.Random) -> list[dict]:
    texts = list(NONE)
    rng.shuffle(texts)
    rows = [{"route": "none", "split": "train", "kind": "base", "messages": chat(t)} for t in texts[:NONE_TRAIN]]
    kinds = itertools.cycle(["base", "base", "misspelled", "multi_turn"])
    for text in texts[NONE_TRAIN:NONE_TRAIN + NONE_TEST]:
        kind = next(kinds)
        if kind == "misspelled":
            messages = chat(misspell(text, rng))
        elif kind == "multi_turn":
            messages = chat(rng.choice(SMALL_TALK), text)
        else:
            messages = chat(text)
        rows.append({"route": "none", "split": "test", "kind": kind, "messages": messages})
    return rows


def main() -> None:
    rng = random.Random(7)
    rows = [row for name, spec in ROUTES.items() for row in route_prompts(name, spec, rng)]
    rows += none_prompts(rng)
    with OUT.open("w", encoding="utf-8") as f:
        for i, row in enumerate(rows):
            f.write(json.dumps({"id": i, **row}, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} prompts to {OUT}")


if __name__ == "__main__":
    main()
