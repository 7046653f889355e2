-- This kind has no status: the objects that use it report its problems in theirs.
return { status = "Healthy", message = staticMessage }
