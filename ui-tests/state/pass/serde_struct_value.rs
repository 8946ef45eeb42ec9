use adk::state::{State, StateKey};

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Preferences {
    theme: String,
    font_size: u8,
}

const PREFERENCES: StateKey<Preferences> = adk::state_key!("user:preferences" => Preferences,);

fn main() {
    let mut state = State::new();
    let preferences = Preferences { theme: "dark".into(), font_size: 14 };
    state.set(PREFERENCES, preferences).unwrap();
    assert_eq!(state.get(PREFERENCES).unwrap().map(|p| p.font_size), Some(14));
}
