"""The schedule fuzzer: random algorithms of a family, random schedules using every primitive,
and the property that each is answered by an error naming the primitive or by a kernel that
matches the reference without writing outside its outputs."""
