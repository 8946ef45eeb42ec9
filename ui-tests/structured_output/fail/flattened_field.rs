use adk::openai::StructuredOutput;

#[derive(serde::Deserialize, schemars::JsonSchema, StructuredOutput)]
struct Place {
    city: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema, StructuredOutput)]
struct Forecast {
    #[serde(flatten)]
    place: Place,
    high: i64,
}

fn main() {}
