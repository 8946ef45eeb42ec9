use adk::openai::StructuredOutput;

#[derive(serde::Deserialize, schemars::JsonSchema, StructuredOutput)]
enum Sky {
    Clear,
    Rain { millimetres: f64 },
}

fn main() {}
