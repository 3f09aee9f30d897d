// The JSON documents `xdeep ... --json` prints, one per command; their schema
// is docs/json.md. Every document carries "schema": "xdeep.<command>/<n>",
// bumped when a field changes meaning or goes away (new fields keep <n>).
#pragma once

#include <nlohmann/json.hpp>

#include "client/daemon_client.h"
#include "xdeep/v1/tuning.pb.h"

namespace xdeep::cli {

// xdeep.plan/1: the decision, its alternatives and rejected examples.
nlohmann::json PlanJson(const client::TuneAnswer& answer);
// One layout row; values a rejected row was never given are null.
nlohmann::json LayoutJson(const client::LayoutRow& row);
// xdeep.budget/1
nlohmann::json BudgetJson(const v1::BudgetResponse& response);
// xdeep.history/1
nlohmann::json HistoryJson(const v1::ListDecisionsResponse& response);

}  // namespace xdeep::cli
