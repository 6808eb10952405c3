"""What campaign_report answers: the report's file, its plots (each a titled set of series), the table and the
champion behind them (models/campaign_results.py)."""

from pydantic import Field

from redline.models.campaign_results import CampaignTable, ChampionReport
from redline.models.strict import Strict


class Series(Strict):
    label: str
    x: list[float]
    y: list[float]


class Plot(Strict):
    name: str
    file: str
    title: str
    x_label: str
    y_label: str
    series: list[Series]
    marked: Series | None = Field(None, description="the champion's point(s), drawn on top")


class CampaignReport(Strict):
    campaign: str
    report: str
    plots: list[Plot]
    table: CampaignTable
    champion: ChampionReport


__all__ = ["CampaignReport", "Plot", "Series"]
