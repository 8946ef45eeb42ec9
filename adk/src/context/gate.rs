//! The contexts' side of turn gates: a gate's opening and closing are announced on the event
//! bus (`TurnGateOpen` with the handle to answer it, `TurnGateClosed` with how it ended).

use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::events::{Event, EventSink};
use crate::gate::{GateError, GateRequest};
use crate::ids::TurnId;

/// Opens a gate, announces it on `events`, and waits for it: the body of both contexts'
/// `wait_for`.
pub(super) async fn wait_for<T: DeserializeOwned>(
    request: GateRequest,
    turn_id: &TurnId,
    events: &EventSink,
    cancellation: &CancellationToken,
) -> Result<T, GateError> {
    crate::gate::wait_for(
        request,
        turn_id,
        cancellation,
        |gate| events.emit(Event::TurnGateOpen { gate }),
        |gate_id, result, settled_at| {
            events.emit(Event::TurnGateClosed {
                turn_id: turn_id.clone(),
                gate_id,
                result,
                settled_at,
            });
        },
    )
    .await
}
