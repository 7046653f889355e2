-- The first condition found with the worst status explains the health; a check starts Healthy.
local rank = { Healthy = 0, Progressing = 1, Degraded = 2 }
local hs = { status = "Healthy", message = "" }

-- worse records a status and its message when the status is worse than the one so far.
local function worse(status, message)
  if rank[status] > rank[hs.status] then
    hs.status = status
    hs.message = message
  end
end

-- named is a field for a message, "?" when it is missing: a health check must not fail on an
-- object written by another version of kafkalink or by hand.
local function named(v)
  if v == nil then
    return "?"
  end
  return tostring(v)
end

-- find is the condition of a type in a list of conditions, nil when there is none.
local function find(conditions, conditionType)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == conditionType then
      return c
    end
  end
  return nil
end

-- generation is the object's metadata.generation, nil when it has none.
local function generation()
  if obj.metadata == nil then
    return nil
  end
  return obj.metadata.generation
end

-- stale is whether a condition describes an older generation of the object than the current
-- one: its verdict, good or bad, is not about what was last applied.
local function stale(c)
  local g = generation()
  return g ~= nil and c.observedGeneration ~= nil and c.observedGeneration < g
end

-- anyStale is whether any condition of a list is stale.
local function anyStale(conditions)
  if conditions == nil then
    return false
  end
  for _, c in ipairs(conditions) do
    if stale(c) then
      return true
    end
  end
  return false
end

-- waitingFor is the message of a status that kafkalink has not caught up with yet.
local function waitingFor(who)
  local g = generation()
  if g == nil then
    return "Waiting for " .. who
  end
  return "Waiting for " .. who .. " to reconcile generation " .. tostring(g)
end

-- describe is a condition's reason and message, after a prefix saying where it was found.
local function describe(prefix, c)
  local text = named(c.reason or c.type)
  if c.message ~= nil and c.message ~= "" then
    text = text .. ": " .. c.message
  end
  return prefix .. text
end

-- judge records the health of a condition whose status is good when it equals good. A good
-- status is Healthy unless its reason says the object does not do all it asks for; a bad one
-- is Progressing when its reason goes away by itself, else (unknown reasons too) Degraded.
local function judge(prefix, c, good)
  local class = reasons[c.reason]
  if c.status == good then
    if class == "Degraded" then
      worse("Degraded", describe(prefix, c))
    end
    return
  end
  if class == "Progressing" or c.status == "Unknown" then
    worse("Progressing", describe(prefix, c))
  else
    worse("Degraded", describe(prefix, c))
  end
end

-- judgeCopy records the health of a copy kafkalink keeps in a member cluster (a binding
-- Secret's target, a gateway's member proxy): not contacted yet or not current is Progressing,
-- a member whose API server does not answer is Degraded.
local function judgeCopy(prefix, copy, current)
  if current then
    return
  end
  local message = named(copy.message)
  if copy.message == notContacted or copy.reachable then
    worse("Progressing", prefix .. message)
  else
    worse("Degraded", prefix .. message)
  end
end

-- parentName names a gateway in route parent and policy ancestor status, as a message prefix.
local function parentName(ref)
  if ref == nil then
    return "KafkaGateway ?"
  end
  local name = "KafkaGateway "
  if ref.namespace ~= nil then
    name = name .. named(ref.namespace) .. "/"
  end
  name = name .. named(ref.name)
  if ref.sectionName ~= nil then
    name = name .. " listener " .. named(ref.sectionName)
  end
  return name
end

-- ours keeps the entries (route parents, policy ancestors) kafkalink's controller wrote.
local function ours(entries)
  local kept = {}
  if entries == nil then
    return kept
  end
  for _, e in ipairs(entries) do
    if e.controllerName == controllerName then
      table.insert(kept, e)
    end
  end
  return kept
end
