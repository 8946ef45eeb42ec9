use adk::openai::StructuredOutput;

#[derive(serde::Deserialize, schemars::JsonSchema, StructuredOutput)]
struct Forecast {
    city: String,
    #[schemars(range(min = 1, max = 14))]
    days: i64,
}

fn main() {}
