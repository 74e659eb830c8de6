"""Email drafting (seed 002): replies drafted in the user's Gmail thread from their context
document (`drafting.md` in their memory), and the draft-sent pairs that measure them."""
