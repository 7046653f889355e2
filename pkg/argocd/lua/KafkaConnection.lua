-- KafkaConnection: its Ready condition, then the copies of its binding Secret in member clusters.
local status = obj.status
local ready = nil
if status ~= nil then
  ready = find(status.conditions, "Ready")
end
if ready == nil then
  return { status = "Progressing", message = waitingFor("kafkalink") }
end
local g = generation()
if stale(ready) or (g ~= nil and status.observedGeneration ~= nil and status.observedGeneration < g) then
  return { status = "Progressing", message = waitingFor("kafkalink") }
end
hs.message = named(ready.message or ready.reason)
judge("", ready, "True")
if status.targets ~= nil then
  for _, target in ipairs(status.targets) do
    judgeCopy("target " .. named(target.name) .. ": ", target, target.synced)
  end
end
return hs
