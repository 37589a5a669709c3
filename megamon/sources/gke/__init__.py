"""GKE input: node pools from the GKE API (or inferred from nodes in simulation)."""
