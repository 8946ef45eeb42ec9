//! Token counts against OpenAI's own: `tests/fixtures/tokens/reference.json` holds a fixed
//! corpus counted by Python `tiktoken` and chat requests counted by `litellm.token_counter`
//! (the command that made it is in `tests/fixtures/tokens/reference.py`). adk's real tokenizer
//! must agree within 1% on the corpus and on each request; the heuristic's error is reported.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use adk::primitives::{Message, StandingInstruction};
use adk::tokens::{
    Encoding, Heuristic, MESSAGE_OVERHEAD, REPLY_PRIMING, Tiktoken, TokenCounter, Tokenizer,
};
use serde_json::Value;

fn reference() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/tokens/reference.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn within_one_percent(ours: usize, theirs: u64) -> bool {
    let (ours, theirs) = (ours as f64, theirs as f64);
    (ours - theirs).abs() <= theirs * 0.01
}

#[test]
fn the_real_tokenizers_count_the_fixed_corpus_as_tiktoken_does() {
    let reference = reference();
    let texts = reference["texts"].as_array().unwrap();
    assert!(texts.len() >= 40, "the corpus is the fixture's");
    for (encoding, name) in [
        (Encoding::O200kBase, "o200k_base"),
        (Encoding::Cl100kBase, "cl100k_base"),
    ] {
        let tokenizer = Tiktoken::new(encoding);
        let (mut ours, mut theirs) = (0, 0);
        for text in texts {
            let counted = tokenizer.count(text["text"].as_str().unwrap());
            let expected = text[name].as_u64().unwrap();
            assert_eq!(counted as u64, expected, "{name}: {:?}", text["text"]);
            ours += counted;
            theirs += expected;
        }
        assert!(
            within_one_percent(ours, theirs),
            "{name}: {ours} against {theirs}"
        );
    }
}

#[test]
fn a_chat_request_counts_within_one_percent_of_litellms_count_for_the_model() {
    for conversation in reference()["conversations"].as_array().unwrap() {
        let model = conversation["model"].as_str().unwrap();
        let counter = TokenCounter::for_model(model);
        assert_ne!(
            counter.tokenizer_name(),
            "heuristic",
            "{model} has a real tokenizer"
        );
        let mut ours = REPLY_PRIMING;
        for (n, message) in conversation["messages"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let content = message["content"].as_str().unwrap();
            ours += match message["role"].as_str().unwrap() {
                "system" => {
                    counter.standing_instruction(&StandingInstruction::new(content).unwrap())
                }
                "user" => counter.message(&Message::user(format!("m{n}"), content).unwrap()),
                _ => counter.message(&Message::assistant(format!("m{n}"), content).unwrap()),
            };
        }
        let theirs = conversation["tokens"].as_u64().unwrap();
        eprintln!("{model}: adk {ours}, LiteLLM {theirs}");
        assert!(
            within_one_percent(ours, theirs),
            "{model}: adk counts {ours}, LiteLLM {theirs}"
        );
    }
}

#[test]
fn the_heuristic_stays_within_a_third_of_the_real_count_on_the_corpus_and_overestimates_english() {
    let reference = reference();
    let texts = reference["texts"].as_array().unwrap();
    let real = Tiktoken::new(Encoding::O200kBase);
    let (mut heuristic, mut tiktoken) = (0, 0);
    for text in texts {
        let text = text["text"].as_str().unwrap();
        heuristic += Heuristic.count(text);
        tiktoken += real.count(text);
    }
    let ratio = heuristic as f64 / tiktoken as f64;
    eprintln!("heuristic {heuristic}, o200k_base {tiktoken}: {ratio:.3}");
    assert!(
        (0.75..=1.34).contains(&ratio),
        "heuristic/o200k = {ratio:.3}"
    );
    let english = "The quick brown fox jumps over the lazy dog, and then it runs away.";
    assert!(Heuristic.count(english) >= real.count(english));
    // The message framing is the same whatever the tokenizer.
    let counter = TokenCounter::new(Heuristic);
    assert_eq!(
        counter.message(&Message::user("m", "four").unwrap()),
        1 + MESSAGE_OVERHEAD
    );
}
