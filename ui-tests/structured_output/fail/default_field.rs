use adk::openai::StructuredOutput;

#[derive(serde::Deserialize, schemars::JsonSchema, StructuredOutput)]
struct Forecast {
    city: String,
    #[serde(default)]
    unit: Option<String>,
}

fn main() {}
