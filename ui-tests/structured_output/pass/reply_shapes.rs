use adk::openai::{StructuredOutput, strict_schema};

/// The sky, as one word.
#[derive(serde::Deserialize, schemars::JsonSchema, StructuredOutput)]
#[serde(rename_all = "snake_case")]
enum Sky {
    Clear,
    Cloudy,
    Rain,
}

#[derive(serde::Deserialize, schemars::JsonSchema, StructuredOutput)]
struct Day {
    /// The day, `YYYY-MM-DD` (said here, not as a `format`).
    date: String,
    high_celsius: f64,
    sky: Sky,
    /// Absent when there is none: sent as nullable, required all the same.
    warning: Option<String>,
}

#[derive(serde::Deserialize, schemars::JsonSchema, StructuredOutput)]
#[structured_output(name = "week-forecast")]
struct Forecast {
    city: String,
    days: Vec<Day>,
    best_day: Option<Box<Day>>,
    sunny_days: i32,
    #[serde(skip)]
    _cached: Option<String>,
}

fn main() {
    assert_eq!(Forecast::NAME, "week-forecast");
    assert_eq!(Day::NAME, "day");
    let schema = strict_schema::<Forecast>();
    assert_eq!(
        schema["required"],
        serde_json::json!(["city", "days", "best_day", "sunny_days"])
    );
    let reply = Forecast::from_reply(
        r#"{"city":"Oslo","days":[{"date":"2026-11-26","high_celsius":4.5,"sky":"rain","warning":null}],
            "best_day":null,"sunny_days":0}"#,
    )
    .unwrap();
    assert_eq!(reply.days.len(), 1);
}
