--[[ xdeep's job_submit/lua (slurm.conf: JobSubmitPlugins=lua; this file as
job_submit.lua beside slurm.conf). Refuses, at submission and before any
allocation, a job on a strictly enforced partition that holds no xdeep
reservation, so nothing a user does reaches a node. The proof is the single-use
admission token the daemon put in the decision; the xdeep plugin passes it in
the job's SPANK environment (XDEEP_ADMISSION) and xdeep-admit asks xdeepd to
consume it, on the daemon's admission socket (the kernel tells the daemon that
slurmctld's user asks). Anything else in the request is the user's to forge, so the token
is checked against the daemon's ledger, never trusted. The job's AdminComment
(which users cannot change) then names the decision, and the job is charged
from slurmctld's completion record (xdeep-jobcomp.sh). A heterogeneous job's
components carry no token: each is held from its own time limit instead.

Jobs on other partitions without a token never leave this file. ]]

-- Site settings (scripts/local-stack.sh and `cmake --install` rewrite them).
local ADMIT = "/usr/local/lib/xdeep/xdeep-admit"
local ADMIT_SOCKET = "/run/xdeep/xdeepd.sock.admit"  -- xdeepd's [server] admit_socket
local STRICT = { gpu = true }      -- partitions with enforcement = "strict" in xdeepd.toml
local FAIL = "open"                -- daemon unavailable: "open" admits (charged from Slurm's
                                   -- record later), "closed" refuses
local TIMEOUT_MS = 3000            -- longest slurmctld waits for the daemon

local NO_VAL = 4294967294
local INFINITE = 4294967295

local function default_partition(part_list)
  for _, part in pairs(part_list) do
    if part.flag_default == 1 then return part.name end
  end
  return nil
end

local function admission_token(job_desc)
  local env = job_desc.spank_job_env
  if type(env) ~= "table" then return nil end
  for _, entry in pairs(env) do
    local token = string.match(tostring(entry), "^XDEEP_ADMISSION=(.*)$")
    if token ~= nil then return token end
  end
  return nil
end

-- Only plain values reach the shell: anything else is passed as `unreadable`,
-- which the daemon refuses.
local function plain(value, pattern, unreadable)
  if value == nil then return nil end
  if string.match(value, pattern) then return value end
  return unreadable
end

-- A heterogeneous component's time limit in seconds (its own --time, else the
-- partition's DefaultTime), 0 when it has none.
local function time_limit_s(job_desc, part_list, partition)
  local minutes = job_desc.time_limit
  if minutes == nil or minutes == NO_VAL or minutes == INFINITE then
    minutes = nil
    for _, part in pairs(part_list) do
      if part.name == partition then minutes = part.default_time end
    end
  end
  if minutes == nil or minutes == NO_VAL or minutes == INFINITE then return 0 end
  return minutes * 60
end

-- Runs xdeep-admit; returns "admitted", "refused" or "unavailable", and its line.
-- `het_limit_s` (a heterogeneous component's time limit) replaces the token.
local function admit(job_desc, token, uid, partition, nodes, het_limit_s)
  local cmd = string.format("%s --socket=%s --timeout-ms=%d --uid=%d --partition=%s --nodes=%d",
                            ADMIT, ADMIT_SOCKET, TIMEOUT_MS, uid, partition, nodes)
  if het_limit_s ~= nil then
    cmd = cmd .. string.format(" --heterogeneous --time-limit-s=%d", het_limit_s)
    local account = plain(job_desc.account, "^[%w_.-]+$", nil)
    if account ~= nil then cmd = cmd .. " --account=" .. account end
  elseif token ~= nil then
    cmd = cmd .. " --token=" .. token
  end
  local optional = {
    array = plain(job_desc.array_inx, "^[%d,:%%-]+$", "x"),
    ["tres-per-node"] = plain(job_desc.tres_per_node, "^[%w:/=,_.-]+$", "gres:gpu:0x"),
    ["tres-per-job"] = plain(job_desc.tres_per_job, "^[%w:/=,_.-]+$", "gres:gpu:0x"),
    ["tres-per-task"] = plain(job_desc.tres_per_task, "^[%w:/=,_.-]+$", "gres:gpu:0x"),
  }
  for name, value in pairs(optional) do cmd = cmd .. " --" .. name .. "=" .. value end
  -- Lua 5.1's pipe:close() gives no exit status: the shell prints it last.
  local pipe = io.popen(cmd .. " 2>&1; echo \"exit=$?\"")
  if pipe == nil then return "unavailable", "cannot run " .. ADMIT end
  local line = pipe:read("*l") or ""
  local rest = pipe:read("*a") or ""
  pipe:close()
  local code = string.match(rest, "exit=(%d+)")
  if code == nil then
    code = string.match(line, "^exit=(%d+)")  -- it printed nothing
    line = ""
  end
  if code == "0" then return "admitted", line end
  if code == "1" then return "refused", line end
  return "unavailable", line
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local partition = job_desc.partition or default_partition(part_list) or ""
  local strict = false
  for name in string.gmatch(partition, "[^,]+") do
    if STRICT[name] then strict = true end
  end
  local token = admission_token(job_desc)
  if not strict and token == nil then return slurm.SUCCESS end
  -- Everything below reaches a shell command: only plain values pass.
  if not string.match(partition, "^[%w_.-]+$") then
    if not strict then return slurm.SUCCESS end
    slurm.log_user("xdeep: partition %s: a job on a strict partition must name exactly one "
                   .. "partition", partition)
    return slurm.ERROR
  end
  if token ~= nil and not string.match(token, "^%x+$") then token = "0" end
  local het_limit_s = nil
  if job_desc.het_job_offset ~= nil and job_desc.het_job_offset ~= NO_VAL then
    -- Tuned launches are never heterogeneous and one token cannot prove each
    -- component: on a strict partition each component holds its own
    -- reservation, sized from its time limit (slurmctld asks once per component).
    if not strict then return slurm.SUCCESS end
    het_limit_s = time_limit_s(job_desc, part_list, partition)
  end
  local nodes = job_desc.min_nodes
  if nodes == nil or nodes == NO_VAL then nodes = 0 end
  local outcome, line = admit(job_desc, token, submit_uid, partition, nodes, het_limit_s)
  if outcome == "admitted" then
    if line ~= "" then job_desc.admin_comment = "xdeep:" .. line end
    return slurm.SUCCESS
  end
  if not strict then return slurm.SUCCESS end  -- advisory partitions never refuse
  if outcome == "refused" then
    slurm.log_user("xdeep: partition %s: %s", partition, line)
    return slurm.ERROR
  end
  if FAIL == "open" then
    slurm.log_info("xdeep: daemon unavailable (%s); admitting job of uid %d on %s (fail=open)",
                   line, submit_uid, partition)
    return slurm.SUCCESS
  end
  slurm.log_user("xdeep: partition %s needs the xdeep budget daemon, which is unavailable (%s); "
                 .. "try again later", partition, line)
  return slurm.ERROR
end

-- Users may not move a job onto a strict partition after submission.
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  if job_desc.partition ~= nil and modify_uid ~= 0 then
    for name in string.gmatch(job_desc.partition, "[^,]+") do
      if STRICT[name] then
        slurm.log_user("xdeep: jobs cannot be moved onto strict partition %s", name)
        return slurm.ERROR
      end
    end
  end
  return slurm.SUCCESS
end

return slurm.SUCCESS
