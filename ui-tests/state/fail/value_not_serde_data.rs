use adk::state::StateKey;

struct Connection {
    socket: std::net::TcpStream,
}

const CONNECTION: StateKey<Connection> = adk::state_key!("temp:connection" => Connection);

fn main() {
    let _ = CONNECTION;
}
