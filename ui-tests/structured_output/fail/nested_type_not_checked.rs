use adk::openai::StructuredOutput;

/// Derives JsonSchema but not StructuredOutput: nothing checked it against strict mode.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Day {
    high: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema, StructuredOutput)]
struct Forecast {
    city: String,
    days: Vec<Day>,
}

fn main() {}
