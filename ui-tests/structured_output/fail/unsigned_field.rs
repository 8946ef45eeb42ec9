use adk::openai::StructuredOutput;

#[derive(serde::Deserialize, schemars::JsonSchema, StructuredOutput)]
struct Forecast {
    city: String,
    days: Option<Vec<u32>>,
}

fn main() {}
