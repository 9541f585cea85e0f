//! The VIP state machine (withdrawn / announced / pessimized).
