use std::collections::HashMap;

use adk::openai::StructuredOutput;

#[derive(serde::Deserialize, schemars::JsonSchema, StructuredOutput)]
struct Forecast {
    city: String,
    highs_by_day: HashMap<String, i64>,
}

fn main() {}
