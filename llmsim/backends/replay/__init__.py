"""`--backend replay`: answer from recorded cassettes, with their events, ids and timing."""
